//! Bodies of the non-multipart messages: the structs [`super::Message`] carries and their
//! per-version layouts.
//!
//! Each `decode_*` takes the version and a cursor over the body (the bytes after the
//! 8-byte header, exactly as long as the header says) and must consume it completely
//! where the layout is fixed; each `encode_*` appends the body. Messages whose body is a
//! model type (`FlowMod`, `GroupMod`, `MeterMod`) use those types directly; what the
//! model does not hold (OpenFlow 1.4's flow `importance`, OpenFlow 1.0's `EMERG` flag
//! semantics) is dropped on decode and written as zero.
//!
//! One file per job, each with its structs and their decoders and encoders side by side:
//! `session` (hello, error, experimenter, features), `config` (switch config, table_mod,
//! role, async config, queue get-config), `port` (port status, port_mod), `packet`
//! (packet-in, packet-out), `flow` (flow_mod, flow-removed), `group` (group_mod and
//! buckets), `meter` (meter_mod and bands) and `bundle` (bundle control and add).
//! Everything public is re-exported here, where the rest of the crate and its users find
//! it.

mod bundle;
mod config;
mod flow;
mod group;
mod meter;
mod packet;
mod port;
mod session;

pub use bundle::{
    bct, BundleAdd, BundleControl, OFPBF_ATOMIC, OFPBF_ORDERED, ONFT_BUNDLE_ADD,
    ONFT_BUNDLE_CONTROL, ONF_EXPERIMENTER_ID,
};
pub use config::{AsyncConfig, RoleMsg, SwitchConfig, TableMod};
pub use flow::FlowRemoved;
pub use packet::{PacketIn, PacketOut};
pub use port::{PortMod, PortStatus};
pub use session::{ErrorMsg, Experimenter, Hello, SwitchFeatures};

pub(crate) use bundle::{
    decode_bundle_add, decode_bundle_ctrl, encode_bundle_add, encode_bundle_ctrl,
};
pub(crate) use config::{
    decode_async, decode_queue_get_config_reply, decode_queue_get_config_request, decode_role,
    decode_switch_config, decode_table_mod, encode_async, encode_queue_get_config, encode_role,
    encode_switch_config, encode_table_mod,
};
pub(crate) use flow::{
    decode_flow_mod, decode_flow_mod_flags, decode_flow_removed, encode_flow_mod,
    encode_flow_mod_flags, encode_flow_removed, encode_of10_instructions,
};
pub(crate) use group::{
    decode_buckets, decode_group_mod, encode_buckets, encode_group_bucket_mod, encode_group_mod,
    layout15, AnyGroupMod,
};
pub(crate) use meter::{decode_bands, decode_meter_mod, encode_bands, encode_meter_mod};
pub(crate) use packet::{decode_packet_in, decode_packet_out, encode_packet_in, encode_packet_out};
pub(crate) use port::{decode_port_mod, decode_port_status, encode_port_mod, encode_port_status};
pub(crate) use session::{
    decode_error, decode_experimenter, decode_features, decode_hello, encode_error,
    encode_experimenter, encode_features, encode_hello,
};
