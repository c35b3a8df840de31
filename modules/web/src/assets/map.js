// The live map of the web module: tiles drawn by the server
// (/tile/LEVEL/X/Y.png, 128 pixels covering 128 * 2^LEVEL voxels, X along
// x and Y along z), panned by dragging and zoomed with the wheel or the
// buttons. Updates are pushed on one stream (/api/live, Server-Sent
// Events: a frame a second at most, only when something changed: every
// player and the blocks changed since the last frame); the players are
// painted on one canvas, only those in view, with names when few are in
// view, when zoomed in, or under the pointer; nothing is painted when
// nothing changed, and the stream is closed while the page is hidden.
// Tiles whose chunks changed are drawn again (a frame that does not follow
// the last one seen asks /api/changes for what was missed); a tile the server could not
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
  const canvas = document.getElementById('markers');
  const context = canvas.getContext('2d');
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
  // Where each player was last painted (CSS pixels), those in view only.
  let painted = new Map();
  // The player under the pointer (its name is shown).
  let hover = null;
  // Names are painted when at most this many players are in view (or
  // zoomed in to 4 pixels a voxel or more).
  const LABELS_UP_TO = 40;
  // For tests and the curious: what the map shows.
  const map = {
    state: state,
    // Every player of the last frame: [name, x, y, z].
    players: [],
    // Frames received on the stream, and canvas paints.
    frames: 0,
    paints: 0,
    // Whether the stream is open now.
    live: function () { return source !== null && source.readyState === 1; },
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
    // Where a player's marker was last painted (CSS pixels in the view),
    // or null if it is not in view.
    markerPosition: function (name) {
      const at = painted.get(name);
      return at ? [at[0], at[1]] : null;
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
    schedulePaint();
  }

  function drawInfo() {
    info.textContent = 'x ' + Math.round(state.x) + ', z ' + Math.round(state.z) +
      ' \u00b7 ' + (state.scale >= 1 ? state.scale + ' px per voxel' : (1 / state.scale) + ' voxels per px') +
      ' \u00b7 ' + map.players.length + ' playing';
  }

  // One paint at the next frame, however many reasons came meanwhile
  // (none while the page is hidden: browsers hold animation frames back).
  let paintDue = false;
  function schedulePaint() {
    if (paintDue) return;
    paintDue = true;
    requestAnimationFrame(paint);
  }

  function paint() {
    paintDue = false;
    map.paints++;
    const width = view.clientWidth;
    const height = view.clientHeight;
    const ratio = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.width = width + 'px';
      canvas.style.height = height + 'px';
    }
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.clearRect(0, 0, width, height);
    const inView = [];
    const next = new Map();
    for (const player of map.players) {
      const [x, y] = screenOf(player[1], player[3]);
      if (x < -8 || y < -8 || x > width + 8 || y > height + 8) continue;
      inView.push([player[0], x, y]);
      next.set(player[0], [x, y]);
    }
    painted = next;
    context.beginPath();
    for (const [, x, y] of inView) {
      context.moveTo(x + 6, y);
      context.arc(x, y, 6, 0, 2 * Math.PI);
    }
    context.fillStyle = '#ff3b30';
    context.fill();
    context.lineWidth = 2;
    context.strokeStyle = '#fff';
    context.stroke();
    const labels = inView.length <= LABELS_UP_TO || state.scale >= 4;
    context.font = '13px "DejaVu Sans", sans-serif';
    context.textBaseline = 'middle';
    context.lineWidth = 3;
    context.strokeStyle = '#000';
    context.fillStyle = '#fff';
    for (const [name, x, y] of inView) {
      if (!labels && name !== hover) continue;
      context.strokeText(name, x + 10, y);
      context.fillText(name, x + 10, y);
    }
    drawInfo();
  }

  // The player whose marker is under the pointer, if any.
  function playerAt(px, py) {
    let best = null;
    let bestDistance = 100;
    for (const [name, at] of painted) {
      const distance = (at[0] - px) * (at[0] - px) + (at[1] - py) * (at[1] - py);
      if (distance < bestDistance) {
        best = name;
        bestDistance = distance;
      }
    }
    return best;
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
    if (!drag) {
      const rect = view.getBoundingClientRect();
      const under = playerAt(event.clientX - rect.left, event.clientY - rect.top);
      if (under !== hover) {
        hover = under;
        view.title = under || '';
        schedulePaint();
      }
      return;
    }
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

  // Draws again the tiles covering `blocks` (level-0 tiles), or every
  // tile when `all`.
  function redrawTiles(blocks, all, version) {
    for (const [key, img] of tiles) {
      const l = Number(img.dataset.level);
      const tx = Number(img.dataset.x);
      const tz = Number(img.dataset.z);
      const hit = all || blocks.some(function (block) {
        return Math.floor(block[0] / (1 << l)) === tx && Math.floor(block[1] / (1 << l)) === tz;
      });
      if (hit) img.src = tileSource(key, version);
    }
  }

  // What the stream missed (a frame skipped while the page was slow, or
  // the stream reopened): the change feed since the last change seen.
  let catchingUp = false;
  async function catchUp() {
    if (catchingUp) return;
    catchingUp = true;
    try {
      const response = await fetch('/api/changes?since=' + state.seq, { cache: 'no-store' });
      if (response.ok) {
        const changes = await response.json();
        if (changes.reset || changes.blocks.length > 0) redrawTiles(changes.blocks, changes.reset, changes.seq);
        if (state.seq === null || changes.seq > state.seq) state.seq = changes.seq;
      }
    } catch (error) {
      // The server may be reloading the module: the next frame tries again.
    }
    catchingUp = false;
  }

  function onFrame(frame) {
    map.frames++;
    if (state.seq === null) {
      // The first frame: the tiles are being loaded as they are now.
      state.seq = frame.seq;
    } else if (frame.reset) {
      redrawTiles([], true, frame.seq);
      state.seq = frame.seq;
    } else if (frame.from === state.seq) {
      if (frame.blocks.length > 0) redrawTiles(frame.blocks, false, frame.seq);
      state.seq = frame.seq;
    } else if (frame.seq !== state.seq) {
      catchUp();
    }
    map.players = frame.players;
    schedulePaint();
  }

  let source = null;
  let reopen = null;
  function openLive() {
    if (source !== null || document.hidden) return;
    source = new EventSource('/api/live');
    source.onmessage = function (event) {
      try {
        onFrame(JSON.parse(event.data));
      } catch (error) {
        // A frame this page does not understand: the next one may do.
      }
    };
    source.onerror = function () {
      // The browser reconnects by itself unless the server refused the
      // stream; then see why (off loopback: the login's cookie).
      if (source === null || source.readyState !== 2) return;
      source = null;
      fetch('/api/changes?since=0', { cache: 'no-store' }).then(function (response) {
        if (response.status === 401) {
          location.replace('/login?next=' + encodeURIComponent(location.pathname + location.search));
        }
      }, function () {});
      clearTimeout(reopen);
      reopen = setTimeout(openLive, 2000);
    };
  }
  function closeLive() {
    clearTimeout(reopen);
    if (source !== null) {
      source.close();
      source = null;
    }
  }
  // A hidden page costs nothing: no stream, no paints.
  document.addEventListener('visibilitychange', function () {
    if (document.hidden) {
      closeLive();
    } else {
      openLive();
      // Changes made while it was hidden.
      if (state.seq !== null) catchUp();
    }
  });

  draw();
  openLive();
})();
