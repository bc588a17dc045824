"""Sends and captures raw frames on eth0 with scapy, for tests that must not depend on the
host IP stack (no ARP, arbitrary checksums).

  l2io.py send SPEC_JSON          send the frames described in SPEC_JSON
  l2io.py sniff SECONDS OUT_JSON [STOP_FILE]
                                  capture UDP frames until STOP_FILE exists (at most
                                  SECONDS), write their summaries; "ready" once capturing

A frame spec is {"src_mac","dst_mac","src_ip","dst_ip","sport","dport","payload",
"bad_ip_checksum"}.
"""

import json
import os
import sys
import threading
import time

from scapy.all import IP, UDP, AsyncSniffer, Ether, Raw, conf, sendp  # noqa: E402

conf.verb = 0


def build(s):
    ip = IP(src=s["src_ip"], dst=s["dst_ip"])
    if s.get("bad_ip_checksum"):
        ip.chksum = 0x1234
    return (Ether(src=s["src_mac"], dst=s["dst_mac"]) / ip /
            UDP(sport=s["sport"], dport=s["dport"]) / Raw(s["payload"].encode()))


def main():
    if sys.argv[1] == "send":
        frames = [build(s) for s in json.loads(sys.argv[2])]
        sendp(frames, iface="eth0", inter=0.01)
    elif sys.argv[1] == "sniff":
        deadline = time.monotonic() + float(sys.argv[2])
        stop_file = sys.argv[4] if len(sys.argv) > 4 else None
        started = threading.Event()
        sn = AsyncSniffer(iface="eth0", filter="udp", store=True,
                          started_callback=started.set)
        sn.start()
        # The socket is open once the callback ran: only then can the test send.
        if not started.wait(timeout=30):
            sys.exit("sniffer did not start")
        print("ready", flush=True)
        # Until the test says everything was sent and had time to arrive (a fixed window
        # is too short when the machine is busy), or the deadline.
        while time.monotonic() < deadline and not (stop_file and os.path.exists(stop_file)):
            time.sleep(0.05)
        pkts = sn.stop() or []
        out = []
        for p in pkts:
            if UDP in p and IP in p:
                raw = bytes(p[UDP].payload).decode(errors="replace")
                out.append({"src_ip": p[IP].src, "dst_ip": p[IP].dst,
                            "sport": p[UDP].sport, "dport": p[UDP].dport, "payload": raw})
        with open(sys.argv[3], "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
