"""GRE frames with scapy, for the L3 GRE tunnel tests.

  greio.py send SPEC_JSON     send the GRE frames described in SPEC_JSON on eth0
  greio.py read PCAP          print (JSON) a summary of every GRE packet in PCAP

A frame spec is {"dst_mac", "src_ip", "dst_ip" (outer, IPv4 or IPv6), "key", "teb" (an
Ethernet payload, protocol 0x6558, to "inner_mac"; else the IPv4 packet itself, protocol
0x0800), "inner_src", "inner_dst" (an ICMP echo request between them), "id" (its ICMP id)}.
A summary is {"src", "dst", "proto", "key", "ip_version" (of the payload's first byte),
"icmp_type", "icmp_id"} (the last two for an IPv4 ICMP payload).
"""

import json
import sys

from scapy.all import GRE, ICMP, IP, Ether, IPv6, Raw, conf, rdpcap, sendp  # noqa: E402

conf.verb = 0


def build(s):
    outer = IPv6(src=s["src_ip"], dst=s["dst_ip"]) if ":" in s["src_ip"] else \
        IP(src=s["src_ip"], dst=s["dst_ip"])
    inner = IP(src=s["inner_src"], dst=s["inner_dst"]) / ICMP(id=s["id"], seq=1) / \
        Raw(b"ferrovs-l3gre")
    if s["teb"]:
        payload = Ether(dst=s["inner_mac"], src="02:00:00:00:00:42") / inner
        proto = 0x6558
    else:
        payload = inner
        proto = 0x0800
    return Ether(dst=s["dst_mac"]) / outer / GRE(key_present=1, key=s["key"], proto=proto) / \
        payload


def summary(p):
    outer = p[Ether].payload
    g = p[GRE]
    raw = bytes(g.payload)
    out = {"src": outer.src, "dst": outer.dst, "proto": g.proto, "key": g.key,
           "ip_version": raw[0] >> 4 if raw else None, "icmp_type": None, "icmp_id": None}
    if g.proto == 0x0800 and raw:
        ip = IP(raw)
        if ICMP in ip:
            out["icmp_type"] = ip[ICMP].type
            out["icmp_id"] = ip[ICMP].id
    return out


def main():
    if sys.argv[1] == "send":
        sendp([build(s) for s in json.loads(sys.argv[2])], iface="eth0", inter=0.01)
    elif sys.argv[1] == "read":
        print(json.dumps([summary(p) for p in rdpcap(sys.argv[2]) if GRE in p]))


if __name__ == "__main__":
    main()
