"""Which addresses and host names `http.get` refuses to reach: everything not plainly public.

Refusal is the default: an address passes only when `ipaddress` calls it global AND none of
the explicit ranges below holds (Python's `is_global` calls multicast global, and says nothing
of IPv6 forms that carry an IPv4 address inside them, so those are checked here by hand).
"""

from __future__ import annotations

import ipaddress

from governance.arguments._urls import IPAddress

_SHARED = ipaddress.IPv4Network("100.64.0.0/10")
# Special-purpose ranges refused whatever the Python patch level says of them: before the
# CVE-2024-4032 fix (3.11.7 among others) `is_global` is True for parts of 192.0.0.0/24.
_IETF_PROTOCOL = ipaddress.IPv4Network("192.0.0.0/24")  # protocol assignments (RFC 6890)
_6TO4_RELAY = ipaddress.IPv4Network("192.88.99.0/24")  # 6to4 relay anycast (RFC 7526)
_SIIT = ipaddress.IPv6Network("::ffff:0:0:0/96")  # IPv4-translated (SIIT, RFC 6145)
_METADATA = frozenset(
    {
        ipaddress.ip_address("169.254.169.254"),  # AWS, GCP, Azure, OpenStack
        ipaddress.ip_address("169.254.170.2"),  # AWS ECS task metadata
        ipaddress.ip_address("100.100.100.200"),  # Alibaba Cloud
        ipaddress.ip_address("192.0.0.192"),  # Oracle Cloud
        ipaddress.ip_address("fd00:ec2::254"),  # AWS over IPv6
    }
)
_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")
_SITE_LOCAL = ipaddress.IPv6Network("fec0::/10")
# Names that reach the machine itself or a cloud's metadata service whatever DNS says.
_REFUSED_NAMES = frozenset(
    {"localhost", "metadata", "metadata.google.internal", "metadata.goog", "instance-data"}
)
_REFUSED_SUFFIXES = (".localhost", ".internal", ".local", ".home.arpa")


def refused_name_reason(host: str) -> str | None:
    """A reason code when the host name itself is refused (before any resolution)."""
    if host in _REFUSED_NAMES or host.endswith(_REFUSED_SUFFIXES):
        return "metadata_host" if "metadata" in host else "internal_host"
    return None


def _v4_reason(ip: ipaddress.IPv4Address) -> str | None:
    if ip in _METADATA:
        return "cloud_metadata"
    checks = (
        (ip.is_unspecified, "unspecified"),
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link_local"),
        (ip.is_multicast, "multicast"),
        (ip in _SHARED, "shared_address"),
        (ip in _IETF_PROTOCOL, "special_purpose"),
        (ip in _6TO4_RELAY, "special_purpose"),
        (ip.is_reserved, "reserved"),
        (ip.is_private, "private"),
        (not ip.is_global, "not_global"),
    )
    return next((reason for hit, reason in checks if hit), None)


def refused_address_reason(ip: IPAddress) -> str | None:
    """A reason code when `ip` must not be connected to, None when it is plainly public."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_reason(ip)
    if ip.scope_id is not None:
        return "zone_id"
    if ip in _METADATA:
        return "cloud_metadata"
    if ip.ipv4_mapped is not None:
        return "ipv4_mapped"
    if ip in _SIIT:
        return "ipv4_translated"
    if any(ip in net for net in _NAT64):
        return "nat64"
    if ip in _IPV4_COMPATIBLE:
        return (
            "unspecified"
            if ip.is_unspecified
            else ("loopback" if ip.is_loopback else "ipv4_compatible")
        )
    if ip.sixtofour is not None and _v4_reason(ip.sixtofour) is not None:
        return "6to4_embedded"
    teredo = ip.teredo
    if teredo is not None and any(_v4_reason(v4) is not None for v4 in teredo):
        return "teredo_embedded"
    checks = (
        (ip.is_loopback, "loopback"),
        (ip.is_link_local, "link_local"),
        (ip in _SITE_LOCAL, "link_local"),
        (ip.is_multicast, "multicast"),
        (ip.is_private, "private"),
        (ip.is_reserved, "reserved"),
        (not ip.is_global, "not_global"),
    )
    return next((reason for hit, reason in checks if hit), None)
