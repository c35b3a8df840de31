// The live map of the web module: tiles drawn by the server
// (/tile/LEVEL/X/Y.png, 128 pixels covering 128 * 2^LEVEL voxels, X along
// x and Y along z), panned by dragging and zoomed with the wheel or the
// buttons; players from /api/players every second as markers; tiles whose
// chunks changed (/api/changes) drawn again; a tile the server could not
// draw (the world busy, the module reloading) asked again after 1 s, then
// 2, 4 ... 30 s while in view (also when the map's share of the world's
// time is spent for now: 503 with Retry-After). Off loopback the page
// needs the cookie /login sets. No library, no CDN.
(function () {
  'use strict';
  const TILE = 128;
  const MAX_LEVEL = 5;
  const MIN_SCALE = 1 / 32;
  const MAX_SCALE = 16;
  const view = document.getElementById('map');
  const layer = document.getElementById('tiles');
  const markerLayer = document.getElementById('markers');
  const info = document.getElementById('info');
  const params = new URLSearchParams(location.search);
  const number = (name, fallback) => {
    const value = Number(params.get(name));
    return params.has(name) && Number.isFinite(value) ? value : fallback;
  };
  // The voxel at the middle of the view and the pixels per voxel.
  const state = {
    x: number('x', 0),
    z: number('z', 0),
    scale: Math.min(MAX_SCALE, Math.max(MIN_SCALE, number('scale', 1))),
    seq: null,
  };
  const tiles = new Map();
  const markers = new Map();
  // For tests and the curious: what the map shows.
  const map = {
    state: state,
    players: [],
    // Every tile in view loaded (or failed with no retry due).
    complete: function () {
      for (const img of tiles.values()) {
        if (!img.complete || img.retry) return false;
      }
      return tiles.size > 0;
    },
    // Tile loads that failed and were retried, since the page opened.
    retries: 0,
    // Tiles in view that loaded with a picture.
    loaded: function () {
      let count = 0;
      for (const img of tiles.values()) {
        if (img.complete && img.naturalWidth > 0) count++;
      }
      return count;
    },
    tileCount: function () { return tiles.size; },
    markerPosition: function (name) {
      const marker = markers.get(name);
      return marker ? [parseFloat(marker.style.left), parseFloat(marker.style.top)] : null;
    },
    moveTo: function (x, z, scale) {
      state.x = x;
      state.z = z;
      if (scale) state.scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, scale));
      draw();
    },
  };
  window.buildatMap = map;

  // The coarsest level still giving each sampled column a pixel or more.
  function level() {
    let l = 0;
    while (l < MAX_LEVEL && state.scale * (1 << (l + 1)) <= 1.0001) l++;
    return l;
  }

  function screenOf(x, z) {
    return [view.clientWidth / 2 + (x - state.x) * state.scale,
            view.clientHeight / 2 + (z - state.z) * state.scale];
  }

  function tileSource(key, version) {
    return '/tile/' + key + '.png' + (version ? '?v=' + version : '');
  }

  // Asks for a failed tile again later, if it is still in view.
  function retryLater(key, img) {
    const delay = Math.min(30000, 1000 * (1 << Math.min(img.failures, 5)));
    img.failures++;
    img.retry = setTimeout(function () {
      img.retry = null;
      if (tiles.get(key) !== img) return;
      map.retries++;
      img.src = tileSource(key, 'r' + map.retries);
    }, delay);
  }

  function draw() {
    const l = level();
    const span = TILE << l;
    const size = span * state.scale;
    const halfW = view.clientWidth / 2 / state.scale;
    const halfH = view.clientHeight / 2 / state.scale;
    const wanted = new Set();
    for (let tz = Math.floor((state.z - halfH) / span); tz * span < state.z + halfH; tz++) {
      for (let tx = Math.floor((state.x - halfW) / span); tx * span < state.x + halfW; tx++) {
        const key = l + '/' + tx + '/' + tz;
        wanted.add(key);
        let img = tiles.get(key);
        if (!img) {
          img = document.createElement('img');
          img.className = 'tile';
          img.alt = '';
          img.draggable = false;
          img.dataset.level = l;
          img.dataset.x = tx;
          img.dataset.z = tz;
          img.failures = 0;
          img.addEventListener('load', function () { img.failures = 0; });
          img.addEventListener('error', function () { retryLater(key, img); });
          img.src = tileSource(key, 0);
          layer.appendChild(img);
          tiles.set(key, img);
        }
        const [left, top] = screenOf(tx * span, tz * span);
        img.style.left = left + 'px';
        img.style.top = top + 'px';
        img.style.width = size + 'px';
        img.style.height = size + 'px';
      }
    }
    for (const [key, img] of tiles) {
      if (!wanted.has(key)) {
        clearTimeout(img.retry);
        img.remove();
        tiles.delete(key);
      }
    }
    drawMarkers();
  }

  function drawInfo() {
    info.textContent = 'x ' + Math.round(state.x) + ', z ' + Math.round(state.z) +
      ' \u00b7 ' + (state.scale >= 1 ? state.scale + ' px per voxel' : (1 / state.scale) + ' voxels per px') +
      ' \u00b7 ' + map.players.length + ' playing';
  }

  function drawMarkers() {
    const seen = new Set();
    for (const player of map.players) {
      seen.add(player.name);
      let marker = markers.get(player.name);
      if (!marker) {
        marker = document.createElement('div');
        marker.className = 'marker';
        const label = document.createElement('span');
        label.textContent = player.name;
        marker.appendChild(label);
        markerLayer.appendChild(marker);
        markers.set(player.name, marker);
      }
      const [left, top] = screenOf(player.position[0], player.position[2]);
      marker.style.left = left + 'px';
      marker.style.top = top + 'px';
      marker.title = player.name + ' at ' + player.position.map(Math.round).join(', ');
    }
    for (const [name, marker] of markers) {
      if (!seen.has(name)) {
        marker.remove();
        markers.delete(name);
      }
    }
    drawInfo();
  }

  function zoom(factor, atX, atY) {
    const scale = Math.min(MAX_SCALE, Math.max(MIN_SCALE, state.scale * factor));
    // Keep the voxel under the pointer where it is.
    const px = atX === undefined ? view.clientWidth / 2 : atX;
    const py = atY === undefined ? view.clientHeight / 2 : atY;
    const vx = state.x + (px - view.clientWidth / 2) / state.scale;
    const vz = state.z + (py - view.clientHeight / 2) / state.scale;
    state.scale = scale;
    state.x = vx - (px - view.clientWidth / 2) / scale;
    state.z = vz - (py - view.clientHeight / 2) / scale;
    draw();
  }

  let drag = null;
  view.addEventListener('pointerdown', function (event) {
    drag = { x: event.clientX, y: event.clientY };
    view.classList.add('dragging');
    view.setPointerCapture(event.pointerId);
  });
  view.addEventListener('pointermove', function (event) {
    if (!drag) return;
    state.x -= (event.clientX - drag.x) / state.scale;
    state.z -= (event.clientY - drag.y) / state.scale;
    drag = { x: event.clientX, y: event.clientY };
    draw();
  });
  const endDrag = function () {
    drag = null;
    view.classList.remove('dragging');
  };
  view.addEventListener('pointerup', endDrag);
  view.addEventListener('pointercancel', endDrag);
  view.addEventListener('wheel', function (event) {
    event.preventDefault();
    zoom(event.deltaY < 0 ? 2 : 0.5, event.clientX, event.clientY);
  }, { passive: false });
  document.getElementById('zoom-in').addEventListener('click', function () { zoom(2); });
  document.getElementById('zoom-out').addEventListener('click', function () { zoom(0.5); });
  window.addEventListener('resize', draw);

  async function pollPlayers() {
    try {
      const response = await fetch('/api/players', { cache: 'no-store' });
      // Off loopback the page needs the login's cookie: a server restarted
      // with a new token, say, asks for it again.
      if (response.status === 401) {
        location.replace('/login?next=' + encodeURIComponent(location.pathname + location.search));
        return;
      }
      if (response.ok) {
        map.players = await response.json();
        drawMarkers();
      }
    } catch (error) {
      // The server may be reloading the module: try again next second.
    }
  }

  // Draws again the tiles covering changed blocks (level-0 tiles).
  async function pollChanges() {
    try {
      const since = state.seq === null ? 0 : state.seq;
      const response = await fetch('/api/changes?since=' + since, { cache: 'no-store' });
      if (!response.ok) return;
      const changes = await response.json();
      if (state.seq !== null && (changes.reset || changes.blocks.length > 0)) {
        for (const [key, img] of tiles) {
          const l = Number(img.dataset.level);
          const tx = Number(img.dataset.x);
          const tz = Number(img.dataset.z);
          const hit = changes.reset || changes.blocks.some(function (block) {
            return Math.floor(block[0] / (1 << l)) === tx && Math.floor(block[1] / (1 << l)) === tz;
          });
          if (hit) img.src = tileSource(key, changes.seq);
        }
      }
      state.seq = changes.seq;
    } catch (error) {
      // As above.
    }
  }

  draw();
  pollPlayers();
  pollChanges();
  setInterval(pollPlayers, 1000);
  setInterval(pollChanges, 2000);
})();
