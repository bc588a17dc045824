//! Fuzzes the continuation decoder (`NXT_RESUME`'s opaque state, `ofproto::continuation`)
//! and the resumption it leads to.
//!
//! Input: 16 bytes of bridge key, then the continuation's bytes. Decoding must never panic;
//! what decodes must encode and decode back to the same continuation, and resuming it on a
//! small pipeline (resubmits, a register stack, a pause) must finish without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ofproto::continuation::Continuation;
use ofproto::Ofproto;
use openflow::text::parse_flow;
use openflow::FlowModCommand;

fn pipeline() -> Ofproto {
    let mut of = Ofproto::new();
    for r in [
        "table=0,actions=push:NXM_NX_REG1[],resubmit(,1),pop:NXM_NX_REG2[],output:2",
        "table=1,reg0=1,actions=controller(userdata=01,pause),resubmit(,1)",
        "table=1,priority=0,actions=set_field:1->reg0,resubmit(,0)",
    ] {
        if let Ok(fm) = parse_flow(r, FlowModCommand::Add) {
            let _ = of.flow_mod(&fm, 0);
        }
    }
    of
}

fuzz_target!(|data: &[u8]| {
    let Some((key, bytes)) = data.split_first_chunk::<16>() else {
        return;
    };
    let Ok(c) = Continuation::decode(bytes, key) else {
        return;
    };
    let again = c.encode().expect("a decoded continuation encodes");
    assert_eq!(Continuation::decode(&again, key).as_ref(), Ok(&c));
    let of = pipeline();
    let mut c = c;
    c.key = of.recirc.key();
    let frame = [0u8; 60];
    let flow = packet::flow::extract(&frame, 1);
    let _ = ofproto::xlate::resume(&of, &flow, Some(&frame), &c, None);
});
