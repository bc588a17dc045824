//! A guest's transmit offloads through a vhost-user ring, in memory: frames whose virtio-net
//! header asks for a checksum or for TCP segmentation come out of `rx_burst` as complete,
//! MSS-sized frames (checked with etherparse), also when a super-packet spans several
//! descriptors and more segments than one batch holds; plain frames pass unchanged; a
//! header that contradicts its frame is refused and its chain returned.

use etherparse::{NetHeaders, PacketBuilder, PacketHeaders, PayloadSlice, TransportHeader};
use netdev::offload::{VnetHdr, F_NEEDS_CSUM, GSO_TCPV4, GSO_TCPV6};
use netdev::vhost::mem::Guest;
use netdev::vhost::vring::{rx_burst, Vring, HDR_MRG};
use packet::{Batch, Pool};
use std::sync::Arc;
use virtio_queue::QueueT;
use vm_memory::{Bytes, GuestAddress, GuestMemoryMmap};

const BASE: u64 = 0x10000;
const SIZE: usize = 512 * 1024;
const DESC: u64 = BASE;
const AVAIL: u64 = BASE + 0x1000;
const USED: u64 = BASE + 0x2000;
const BUFS: u64 = BASE + 0x4000;
const SLOTS: u16 = 64;

struct Guestside {
    m: Arc<Guest>,
    v: Vring,
    next_avail: u16,
    next_desc: u16,
    next_buf: u64,
}

impl Guestside {
    fn new() -> Guestside {
        let m = Arc::new(Guest::new(
            GuestMemoryMmap::from_ranges(&[(GuestAddress(BASE), SIZE)]).expect("anon memory"),
        ));
        let mut v = Vring::split_in(m.clone(), SLOTS, DESC as u32, AVAIL as u32, USED as u32);
        assert!(v.q.is_valid(&m.mem));
        v.offload = true;
        Guestside {
            m,
            v,
            next_avail: 0,
            next_desc: 0,
            next_buf: BUFS,
        }
    }

    /// Offers one transmit chain: a 12-byte header descriptor, then `frame` cut into
    /// descriptors of at most `piece` bytes.
    fn send(&mut self, h: &VnetHdr, frame: &[u8], piece: usize) -> u16 {
        let mut hdr = [0u8; HDR_MRG];
        hdr[0] = h.flags;
        hdr[1] = h.gso_type;
        hdr[2..4].copy_from_slice(&h.hdr_len.to_le_bytes());
        hdr[4..6].copy_from_slice(&h.gso_size.to_le_bytes());
        hdr[6..8].copy_from_slice(&h.csum_start.to_le_bytes());
        hdr[8..10].copy_from_slice(&h.csum_offset.to_le_bytes());
        let mut parts: Vec<&[u8]> = vec![&hdr];
        parts.extend(frame.chunks(piece));
        let head = self.next_desc;
        for (k, part) in parts.iter().enumerate() {
            let i = self.next_desc;
            self.next_desc += 1;
            let addr = self.next_buf;
            self.next_buf += part.len() as u64;
            self.m
                .mem
                .write_slice(part, GuestAddress(addr))
                .expect("buf");
            let last = k == parts.len() - 1;
            let mut d = [0u8; 16];
            d[..8].copy_from_slice(&addr.to_le_bytes());
            d[8..12].copy_from_slice(&(part.len() as u32).to_le_bytes());
            d[12..14].copy_from_slice(&(if last { 0u16 } else { 1 }).to_le_bytes());
            d[14..16].copy_from_slice(&(i + 1).to_le_bytes());
            self.m
                .mem
                .write_slice(&d, GuestAddress(DESC + 16 * u64::from(i)))
                .expect("desc");
        }
        let slot = AVAIL + 4 + 2 * u64::from(self.next_avail % SLOTS);
        self.m
            .mem
            .write_slice(&head.to_le_bytes(), GuestAddress(slot))
            .expect("avail");
        self.next_avail += 1;
        self.m
            .mem
            .write_slice(&self.next_avail.to_le_bytes(), GuestAddress(AVAIL + 2))
            .expect("avail idx");
        head
    }

    fn used_idx(&self) -> u16 {
        let mut b = [0u8; 2];
        self.m
            .mem
            .read_slice(&mut b, GuestAddress(USED + 2))
            .expect("used");
        u16::from_le_bytes(b)
    }
}

fn body(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 13 + i / 255) as u8).collect()
}

fn tcp_frame(v6: bool, payload: &[u8]) -> Vec<u8> {
    let b = PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2]);
    let b = if v6 {
        b.ipv6([0xfd; 16], [0xfe; 16], 64)
    } else {
        b.ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
    };
    let b = b.tcp(40000, 5201, 7000, 512).ack(1).psh();
    let mut f = Vec::new();
    b.write(&mut f, payload).expect("build");
    f
}

/// Sequence number and payload of a complete TCP segment; panics on a bad length or checksum.
fn segment(f: &[u8]) -> (u32, Vec<u8>) {
    let h = PacketHeaders::from_ethernet_slice(f).expect("parses");
    let Some(TransportHeader::Tcp(tcp)) = &h.transport else {
        panic!("not tcp")
    };
    let PayloadSlice::Tcp(data) = h.payload else {
        panic!("no payload")
    };
    let want = match &h.net {
        Some(NetHeaders::Ipv4(ip, _)) => {
            assert_eq!(ip.header_checksum, ip.calc_header_checksum());
            assert_eq!(usize::from(ip.total_len), f.len() - 14);
            tcp.calc_checksum_ipv4(ip, data).expect("len")
        }
        Some(NetHeaders::Ipv6(ip, _)) => {
            assert_eq!(usize::from(ip.payload_length), f.len() - 54);
            tcp.calc_checksum_ipv6(ip, data).expect("len")
        }
        None => panic!("no ip"),
    };
    assert_eq!(tcp.checksum, want, "tcp checksum");
    (tcp.sequence_number, data.to_vec())
}

fn tso(gso_type: u8, mss: u16, l4: u16) -> VnetHdr {
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type,
        hdr_len: l4 + 20,
        gso_size: mss,
        csum_start: l4,
        csum_offset: 16,
    }
}

#[test]
fn super_packets_are_segmented_across_bursts() {
    let mut g = Guestside::new();
    // 40 segments of 1000 bytes, and a pool of 16 buffers: the super-packet is delivered
    // over three bursts, each taking what the pool has.
    let mut pool = Pool::new(16);
    let data = body(40_000);
    g.send(&tso(GSO_TCPV4, 1000, 34), &tcp_frame(false, &data), 3000);
    let data6 = body(2_500);
    g.send(&tso(GSO_TCPV6, 1200, 54), &tcp_frame(true, &data6), 700);

    let mut frames = Vec::new();
    let mut sizes = Vec::new();
    for _ in 0..5 {
        let mut batch = Batch::new();
        let b = rx_burst(&mut g.v, &mut pool, &mut batch);
        assert_eq!(b.errors, 0, "{b:?} after {sizes:?}");
        assert_eq!(b.packets as usize, batch.len());
        sizes.push(batch.len());
        frames.extend(batch.packets().iter().map(|p| p.data().to_vec()));
        pool.free_batch(&mut batch);
    }
    assert_eq!(sizes, [16, 16, 11, 0, 0]);
    assert_eq!(frames.len(), 40 + 3);
    assert_eq!(g.used_idx(), 2, "both chains returned");
    let mut all = Vec::new();
    for (i, f) in frames[..40].iter().enumerate() {
        let (seq, p) = segment(f);
        assert_eq!(seq, 7000 + 1000 * i as u32);
        assert_eq!(p.len(), 1000);
        all.extend(p);
    }
    assert_eq!(all, data);
    let mut all6 = Vec::new();
    for f in &frames[40..] {
        all6.extend(segment(f).1);
    }
    assert_eq!(all6, data6);
}

#[test]
fn checksums_are_completed_and_plain_frames_pass_unchanged() {
    let mut g = Guestside::new();
    let mut pool = Pool::new(64);
    // A UDP datagram whose checksum field holds only the pseudo-header sum.
    let mut udp = Vec::new();
    PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .udp(1000, 2000)
        .write(&mut udp, &body(300))
        .expect("build");
    let good = udp.clone();
    udp[40] = 0x12; // checksum field (34 + 6): not the complete sum
    udp[41] = 0x34;
    let partial = VnetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 6,
        ..VnetHdr::default()
    };
    // The field must hold the pseudo-header sum: recompute what a guest would leave there.
    let pseudo = {
        let mut s: u32 = 0;
        for w in [[10u8, 0], [0, 1], [10, 0], [0, 2], [0, 17]] {
            s += u32::from(u16::from_be_bytes(w));
        }
        s += (udp.len() - 34) as u32;
        while s > 0xffff {
            s = (s & 0xffff) + (s >> 16);
        }
        s as u16
    };
    udp[40..42].copy_from_slice(&pseudo.to_be_bytes());
    g.send(&partial, &udp, 2048);
    let plain = tcp_frame(false, &body(100));
    g.send(&VnetHdr::default(), &plain, 64);
    // A header whose checksum offset lies past the frame.
    let bad = VnetHdr {
        flags: F_NEEDS_CSUM,
        csum_start: 34,
        csum_offset: 5000,
        ..VnetHdr::default()
    };
    g.send(&bad, &plain, 2048);

    let mut batch = Batch::new();
    let b = rx_burst(&mut g.v, &mut pool, &mut batch);
    assert_eq!((b.packets, b.errors), (2, 1));
    assert_eq!(g.used_idx(), 3, "the refused chain is returned too");
    let got: Vec<Vec<u8>> = batch.packets().iter().map(|p| p.data().to_vec()).collect();
    assert_eq!(got[0], good, "the UDP checksum is completed");
    assert_eq!(got[1], plain);
    pool.free_batch(&mut batch);
}

#[test]
fn without_offloads_a_frame_longer_than_a_buffer_is_refused() {
    let mut g = Guestside::new();
    g.v.offload = false;
    let mut pool = Pool::new(64);
    g.send(
        &tso(GSO_TCPV4, 1000, 34),
        &tcp_frame(false, &body(5000)),
        3000,
    );
    let mut batch = Batch::new();
    let b = rx_burst(&mut g.v, &mut pool, &mut batch);
    assert_eq!((b.packets, b.errors), (0, 1));
    assert_eq!(g.used_idx(), 1);
}
