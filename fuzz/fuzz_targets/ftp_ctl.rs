//! Fuzzes the FTP helper's reading of a control segment (`conntrack::alg::ftp::parse`):
//! the input is one TCP payload, read as over IPv4 and as over IPv6.
//!
//! Checks besides "never panics": only the first 128 bytes matter (the helper reads 127
//! of them); over IPv4 every announced data connection carries the address of its
//! message, over IPv6 only the active one (`EPRT`) does; a message that does not start
//! like `PORT`, `227` or `EPRT` (nor contains "Extended Passive" over IPv6) is `Other`.
#![no_main]

use conntrack::alg::ftp::{parse, FtpCtl, Mode, MSG_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let v4 = parse(data, false);
    let v6 = parse(data, true);
    if data.len() > MSG_MAX {
        assert_eq!(v4, parse(&data[..MSG_MAX], false));
        assert_eq!(v6, parse(&data[..MSG_MAX], true));
    }
    if let FtpCtl::Data { addr, .. } = v4 {
        let a = addr.expect("an IPv4 message names its address");
        assert_eq!(a[4..], [0u8; 12]);
    }
    if let FtpCtl::Data { mode, addr, .. } = v6 {
        assert_eq!(addr.is_some(), mode == Mode::Active);
    }
    let head = |p: &[u8]| data.len() >= p.len() && data[..p.len()].eq_ignore_ascii_case(p);
    if !head(b"PORT") && !data.starts_with(b"227") {
        assert_eq!(v4, FtpCtl::Other);
    }
    let text = &data[..data.len().min(MSG_MAX)];
    let epsv = text
        .windows(16)
        .any(|w| w.eq_ignore_ascii_case(b"EXTENDED PASSIVE"));
    if !head(b"EPRT") && !epsv {
        assert_eq!(v6, FtpCtl::Other);
    }
});
