//! The [`Port`] implementation: receive from the ring's blocks, transmit through the ring's frames,
//! link state and statistics.

use super::*;

/// What one ring frame turned out to be.
pub(super) enum RxFrame<'a> {
    /// Deliver these bytes.
    Deliver {
        data: &'a [u8],
        vnet: VnetHdr,
        tag: Option<[u8; 4]>,
    },
    /// Skip silently (our own or another sender's outgoing frame).
    Skip,
    /// Count as an rx error and skip.
    Error,
}

/// Parses the frame at `off` of a user-owned block. `None`: the header itself is out of
/// bounds (the rest of the block cannot be trusted). Otherwise the frame and its
/// `tp_next_offset`.
pub(super) fn parse_frame(block: &[u8], off: usize) -> Option<(RxFrame<'_>, u32)> {
    let h = block.get(off..)?;
    let next = rd32(h, H_NEXT)?;
    let snaplen = rd32(h, H_SNAPLEN)? as usize;
    let len = rd32(h, H_LEN)? as usize;
    let status = rd32(h, H_STATUS)?;
    let mac = usize::from(rd16(h, H_MAC)?);
    let pkttype = *h.get(SLL_PKTTYPE)?;
    if pkttype == libc::PACKET_OUTGOING {
        return Some((RxFrame::Skip, next));
    }
    if snaplen < len || mac < SLL_OFF + VNET_HDR_LEN {
        return Some((RxFrame::Error, next));
    }
    let Some(data) = h.get(mac..mac + snaplen) else {
        return Some((RxFrame::Error, next));
    };
    let mut vb = [0u8; VNET_HDR_LEN];
    vb.copy_from_slice(h.get(mac - VNET_HDR_LEN..mac)?);
    let tag = if status & libc::TP_STATUS_VLAN_VALID != 0 {
        let tci = rd32(h, H_VLAN_TCI)? as u16;
        let tpid = if status & libc::TP_STATUS_VLAN_TPID_VALID != 0 {
            rd16(h, H_VLAN_TPID)?
        } else {
            0x8100
        };
        let (p, c) = (tpid.to_be_bytes(), tci.to_be_bytes());
        Some([p[0], p[1], c[0], c[1]])
    } else {
        None
    };
    Some((
        RxFrame::Deliver {
            data,
            vnet: VnetHdr::parse(&vb),
            tag,
        },
        next,
    ))
}

/// Writes the frames of `plan` from segment `*seg` on into buffers from `pool` and onto
/// `batch`, counting them in `stats`. Returns how many were delivered and whether the plan
/// is done; if not (the batch is full or the pool empty), `*seg` is where to resume.
#[inline]
fn deliver(
    plan: &Plan<'_>,
    seg: &mut usize,
    pool: &mut Pool,
    batch: &mut Batch,
    stats: &mut PortStats,
) -> (usize, bool) {
    let mut n = 0;
    while *seg < plan.count() {
        if batch.is_full() {
            return (n, false);
        }
        let Some(mut pkt) = pool.alloc() else {
            // Leave the rest in the ring; we resume here when buffers come back.
            return (n, false);
        };
        let len = plan.len_of(*seg);
        let written = match pkt.reset_for_rx(len) {
            Some(buf) => plan.write(*seg, buf),
            None => 0,
        };
        *seg += 1;
        if written == 0 {
            stats.rx_errors += 1;
            pool.free(pkt);
            continue;
        }
        stats.rx_packets += 1;
        stats.rx_bytes += written as u64;
        if let Err(p) = batch.push(pkt) {
            pool.free(p);
            return (n, false);
        }
        n += 1;
    }
    (n, true)
}

impl Port for SystemPort {
    fn name(&self) -> &str {
        &self.name
    }

    fn kind(&self) -> &'static str {
        KIND
    }

    fn rx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) -> usize {
        let Some(rings) = self.rings.as_mut() else {
            return 0;
        };
        if rings.rx.nblocks == 0 {
            // A transmit-only handle (see `share`).
            return 0;
        }
        let rx = &mut rings.rx;
        let stats = &mut self.stats;
        let mut n = 0;
        while !batch.is_full() {
            if rx.left == 0 && !rx.open_block() {
                break;
            }
            // SAFETY: `rx.left > 0` means we own the current block (its status was seen as
            // TP_STATUS_USER and not handed back yet); it lies inside the mapping.
            let block = unsafe { std::slice::from_raw_parts(rx.block_ptr(), RX_BLOCK_SIZE) };
            // Not even a readable header, or a frame that claims more frames follow but no
            // offset to them: the rest of the block cannot be trusted.
            let Some((frame, next)) =
                parse_frame(block, rx.off).filter(|&(_, next)| rx.left <= 1 || next != 0)
            else {
                stats.rx_errors += 1;
                rx.release_block();
                continue;
            };
            let plan = match frame {
                RxFrame::Deliver { data, vnet, tag } => Plan::new(data, tag, &vnet).ok(),
                RxFrame::Skip => {
                    rx.advance(next);
                    continue;
                }
                RxFrame::Error => None,
            };
            let Some(plan) = plan else {
                stats.rx_errors += 1;
                rx.advance(next);
                continue;
            };
            let (delivered, whole) = deliver(&plan, &mut rx.seg, pool, batch, stats);
            n += delivered;
            if !whole {
                break;
            }
            rx.advance(next);
        }
        n
    }

    fn tx_batch(&mut self, pool: &mut Pool, batch: &mut Batch) {
        let (Some(rings), Some(fd)) = (self.rings.as_mut(), self.fd.as_ref()) else {
            self.stats.tx_dropped += batch.len() as u64;
            pool.free_batch(batch);
            return;
        };
        let tx = &mut rings.tx;
        let max_len = self.link.mtu() as usize + 14;
        let room = tx.frame_size - TX_DATA_OFF - VNET_HDR_LEN;
        let mut queued = 0usize;
        for pkt in batch.drain() {
            let data = pkt.data();
            let tagged = matches!(data.get(12..14), Some([0x81, 0x00]) | Some([0x88, 0xa8]));
            let limit = if tagged { max_len + 4 } else { max_len };
            if data.len() > limit || data.len() > room || data.len() < 14 {
                self.stats.tx_errors += 1;
                pool.free(pkt);
                continue;
            }
            let i = tx.head;
            match tx.status(i).load(Ordering::Acquire) {
                libc::TP_STATUS_AVAILABLE => {}
                libc::TP_STATUS_WRONG_FORMAT => {
                    // Only without PACKET_LOSS; reclaim the slot and count the old frame.
                    self.stats.tx_errors += 1;
                }
                _ => {
                    self.stats.tx_dropped += 1;
                    pool.free(pkt);
                    continue;
                }
            }
            {
                // SAFETY: the acquire load saw the slot available, so the kernel is not
                // reading or writing it until we store TP_STATUS_SEND_REQUEST below; the slot
                // is `frame_size` bytes inside the mapping. This is the only live reference to
                // it and it ends before the status store.
                let slot = unsafe { std::slice::from_raw_parts_mut(tx.slot(i), tx.frame_size) };
                let total = VNET_HDR_LEN + data.len();
                slot[H_NEXT..H_NEXT + 4].copy_from_slice(&0u32.to_ne_bytes());
                slot[H_LEN..H_LEN + 4].copy_from_slice(&(total as u32).to_ne_bytes());
                slot[H_SNAPLEN..H_SNAPLEN + 4].copy_from_slice(&(total as u32).to_ne_bytes());
                slot[TX_DATA_OFF..TX_DATA_OFF + VNET_HDR_LEN].fill(0);
                let d = TX_DATA_OFF + VNET_HDR_LEN;
                slot[d..d + data.len()].copy_from_slice(data);
            }
            tx.status(i)
                .store(libc::TP_STATUS_SEND_REQUEST, Ordering::Release);
            tx.head = (i + 1) % tx.nframes;
            self.stats.tx_packets += 1;
            self.stats.tx_bytes += data.len() as u64;
            queued += 1;
            pool.free(pkt);
        }
        if queued > 0 {
            // SAFETY: send(2) with no buffer: the kernel takes the data from the TX ring.
            let rc = unsafe { libc::send(fd.as_raw_fd(), ptr::null(), 0, libc::MSG_DONTWAIT) };
            if rc < 0 {
                let e = sys::last_err();
                // EAGAIN/ENOBUFS: the slots stay requested and go out with the next kick.
                if !matches!(e.raw_os_error(), Some(libc::EAGAIN) | Some(libc::ENOBUFS)) {
                    self.stats.tx_errors += 1;
                }
            }
        }
    }

    fn rxq_fd(&self, q: usize) -> Option<RawFd> {
        // TPACKET_V3: readable once a block is handed to user space (full, or after the
        // retire timer).
        if q == 0 && self.rx_blocks > 0 {
            self.raw_fd()
        } else {
            None
        }
    }

    fn share(&mut self) -> Option<Box<dyn Port>> {
        let (fd, rings, _, mtu) = open_socket(&self.name, 0).ok()?;
        let link = LinkCache::new(fd.as_raw_fd(), &self.name, mtu);
        Some(Box::new(SystemPort {
            name: self.name.clone(),
            ifindex: self.ifindex,
            mac: self.mac,
            rings: Some(rings),
            fd: Some(fd),
            link,
            stats: PortStats::default(),
            ring_drops: Cell::new(0),
            rx_blocks: 0,
        }))
    }

    fn take_rxq(&mut self, q: usize) -> Option<RxqState> {
        if q != 0 || self.rx_blocks == 0 {
            return None;
        }
        // This handle keeps transmitting through a new transmit-only socket; the receiving
        // socket (with its own transmit ring) goes to the other handle.
        let (fd, rings, _, _) = open_socket(&self.name, 0).ok()?;
        self.poll_ring_drops();
        let old_rings = self.rings.replace(rings)?;
        let old_fd = self.fd.replace(fd)?;
        let st = SysRxq {
            rings: old_rings,
            fd: old_fd,
            drops: self.ring_drops.replace(0),
            rx_blocks: self.rx_blocks,
        };
        self.rx_blocks = 0;
        Some(Box::new(st))
    }

    fn put_rxq(&mut self, q: usize, s: RxqState) -> Result<(), RxqState> {
        if q != 0 || self.rx_blocks != 0 {
            return Err(s);
        }
        let st = s.downcast::<SysRxq>()?;
        let st = *st;
        // Unmap this handle's transmit-only rings before closing its socket.
        self.rings = Some(st.rings);
        self.fd = Some(st.fd);
        self.ring_drops.set(self.ring_drops.get() + st.drops);
        self.rx_blocks = st.rx_blocks;
        Ok(())
    }

    fn stats(&self) -> PortStats {
        self.poll_ring_drops();
        let mut s = self.stats;
        s.rx_dropped += self.ring_drops.get();
        s
    }

    fn link_state(&self) -> LinkState {
        match &self.fd {
            Some(fd) => self.link.state(fd, &self.name),
            None => LinkState::Down,
        }
    }

    fn mac(&self) -> Option<[u8; 6]> {
        Some(self.mac)
    }

    fn ifindex(&self) -> Option<u32> {
        Some(self.ifindex)
    }

    fn options(&self) -> Vec<(String, String)> {
        if self.rx_blocks == RX_BLOCKS {
            Vec::new()
        } else {
            vec![("rx_ring_blocks".into(), self.rx_blocks.to_string())]
        }
    }

    fn close(&mut self) {
        if self.raw_fd().is_some() {
            self.poll_ring_drops();
        }
        // Unmap first, then close the socket (which also drops the promiscuous membership).
        self.rings = None;
        self.fd = None;
    }
}
