//! `buildat-format`: every binary format of buildat, as pure bytes ⇄ values
//! transforms. The server, its modules and the client read and write the same
//! bytes through this crate.
//!
//! Owns: the primitive encodings ([`reader`], [`writer`]), the interned string
//! table ([`strings`]), the record stream with passes ([`records`]), the voxel
//! data blob ([`voxel_blob`]), the light blob ([`light_blob`]), the section
//! record ([`section`]), the single-blob container ([`container`]) and its one
//! kind, the world backup ([`backup`]), packet framing and packet type tables
//! ([`packet`]), payload encoding with the typed [`Packet`] trait
//! ([`payload`]), the PROXY protocol v2 header a forwarder sends
//! ([`proxy`]), and a block of the rollback log ([`rollback_blob`]); each packet's definition lives in the crate that owns it.
//! `docs/formats.md` describes every byte.
//!
//! Does not own: I/O of any kind (callers hand in byte slices and take back
//! byte vectors), storage, networking, registries. Nothing here panics on any
//! input: every length is checked before it is used, and every failure is a
//! typed error.
//!
//! ```
//! use buildat_format::{PacketReader, PacketWriter, decode_voxels, encode_voxels};
//!
//! // Packets: the writer defines names on first use, the reader resolves them.
//! let mut tx = PacketWriter::default();
//! tx.write("core:run_script", b"print(1)").unwrap();
//! let mut rx = PacketReader::default();
//! rx.push(&tx.take());
//! let p = rx.try_next_packet().unwrap().unwrap();
//! assert_eq!((p.name.as_str(), p.data.as_slice()), ("core:run_script", &b"print(1)"[..]));
//! assert_eq!(rx.try_next_packet().unwrap(), None);
//!
//! // Voxels are stored by name and come back through the current registry.
//! let blob = encode_voxels(&[1, 1, 2], |id| Some(["air", "stone", "dirt"][id as usize])).unwrap();
//! let d = decode_voxels(&blob, |name| (name == "stone").then_some(7), 0).unwrap();
//! assert_eq!(d.voxels, [7, 7, 0]);
//! assert_eq!(d.unknown_names, ["dirt"]);
//! ```

#![forbid(unsafe_code)]
#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

pub mod backup;
pub mod container;
pub mod light_blob;
pub mod magic;
pub mod packet;
pub mod payload;
pub mod proxy;
pub mod reader;
pub mod records;
pub mod rollback_blob;
pub mod section;
pub mod strings;
pub mod voxel_blob;
pub mod writer;

pub use backup::{BackupReadError, BackupReader, BackupSection, WorldBackup};
pub use container::{ContainerError, ContainerHeader, ContainerKind, PayloadRef};
pub use light_blob::{LightBlobError, decode_light, encode_light, encode_light_v1};
pub use magic::MagicError;
pub use packet::{
    Frame, FrameDecoder, FrameEncoder, FrameError, PacketReadError, PacketReader, PacketTypeError,
    PacketWriter, RawPacket, ReadItem, Received, ReceiverPacketTypes, SenderPacketTypes,
};
pub use payload::{Packet, PayloadError};
pub use reader::{ReadError, Reader};
pub use records::{Entry, Pass, Placement, RecordError, RecordHeader, RecordReader, RecordWriter};
pub use section::{
    Node, NodeKind, NodeOptions, NodeRef, SectionError, SectionReader, SectionWriter,
};
pub use strings::{StringTable, StringTableBuilder};
pub use voxel_blob::{DecodeLimits, DecodedVoxels, VoxelBlobError, decode_voxels, encode_voxels};
pub use writer::Writer;
