"""Every notation a refused host can be written in is read to the address it names and refused;
public addresses in the same notations pass. Nothing here opens a socket: the connector fails
the test if it is ever called."""

from __future__ import annotations

import socket

import pytest

from governance.arguments._urls import UrlRefused, parse_http_url
from governance.tools._http_addresses import refused_address_reason
from governance.tools._http_fetch import HttpFetcher
from governance.tools._local import ToolExecutionError


def _never_connect(address: str, port: int, timeout: float) -> socket.socket:
    raise AssertionError(f"connected to {address}:{port}")


def _never_resolve(host: str, port: int) -> list[str]:
    raise AssertionError(f"resolved {host}")


OFFLINE = HttpFetcher(resolver=_never_resolve, connector=_never_connect)

# (url, reason): the host is an IP literal or a refused name, so no resolver is consulted.
REFUSED = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://127.0.1/", "loopback"),
    ("http://2130706433/", "loopback"),
    ("http://017700000001/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),
    ("http://0177.1/", "loopback"),
    ("http://0x7f.1/", "loopback"),
    ("http://0x7f000001/", "loopback"),
    ("http://0X7F.0X0.0X0.0X1/", "loopback"),
    ("http://127.0.0.1./", "loopback"),
    ("http://127.000.000.001/", "loopback"),
    ("http://0x7f.0.0.1:80/", "loopback"),
    ("HTTP://127.0.0.1/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]/", "loopback"),
    ("http://0/", "unspecified"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://10.0.0.1/", "private"),
    ("http://012.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://3232235777/", "private"),
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://169.254.169.254/", "cloud_metadata"),
    ("http://2852039166/", "cloud_metadata"),
    ("http://0xa9fea9fe/", "cloud_metadata"),
    ("http://0251.0376.0251.0376/", "cloud_metadata"),
    ("http://169.254.43518/", "cloud_metadata"),
    ("http://[fd00:ec2::254]/", "cloud_metadata"),
    ("http://100.100.100.200/", "cloud_metadata"),
    ("http://metadata.google.internal/", "metadata_host"),
    ("http://METADATA.GOOGLE.INTERNAL./", "metadata_host"),
    ("http://metadata/", "metadata_host"),
    ("http://localhost/", "internal_host"),
    ("http://api.localhost/", "internal_host"),
    ("http://printer.local/", "internal_host"),
    ("http://169.254.1.1/", "link_local"),
    ("http://[fe80::1]/", "link_local"),
    ("http://[fec0::1]/", "link_local"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250/", "multicast"),
    ("http://[ff02::1]/", "multicast"),
    ("http://100.64.0.1/", "shared_address"),
    ("http://100.127.255.254/", "shared_address"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://192.0.2.1/", "private"),
    ("http://198.18.0.1/", "private"),
    ("http://[::ffff:127.0.0.1]/", "ipv4_mapped"),
    ("http://[::ffff:7f00:1]/", "ipv4_mapped"),
    ("http://[::ffff:8.8.8.8]/", "ipv4_mapped"),
    ("http://[::127.0.0.1]/", "ipv4_compatible"),
    ("http://[::a9fe:a9fe]/", "ipv4_compatible"),
    ("http://[64:ff9b::127.0.0.1]/", "nat64"),
    ("http://[64:ff9b::a9fe:a9fe]/", "nat64"),
    ("http://[64:ff9b:1::7f00:1]/", "nat64"),
    ("http://[2002:7f00:1::]/", "6to4_embedded"),
    ("http://[2002:a9fe:a9fe::1]/", "6to4_embedded"),
    ("http://[2002:c0a8:101::]/", "6to4_embedded"),
    ("http://[2001:db8::1]/", "private"),
    ("https://[::1]:443/", "loopback"),
    ("http://192.0.0.9/", "special_purpose"),
    ("http://192.0.0.10/", "special_purpose"),
    ("http://192.0.0.255/", "special_purpose"),
    ("http://192.88.99.1/", "special_purpose"),
    ("http://[::ffff:0:7f00:1]/", "ipv4_translated"),
    ("http://[::ffff:0:808:808]/", "ipv4_translated"),
]


@pytest.mark.parametrize(("url", "reason"), REFUSED)
def test_a_refused_host_is_refused_in_every_notation_without_connecting(
    url: str, reason: str
) -> None:
    with pytest.raises(ToolExecutionError) as refused:
        OFFLINE.fetch(url)
    assert refused.value.reason == reason


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[fe80::1%25eth0]/", "zone_id"),
        ("http://[fe80::1%eth0]/", "zone_id"),
        ("http://fe80::1%eth0/", "bad_port"),
        ("http://::1/", "bad_url"),
        ("http://user:pw@example.com/", "userinfo"),
        ("http://example.com@127.0.0.1/", "userinfo"),
        ("http://@127.0.0.1/", "userinfo"),
        ("file:///etc/passwd", "bad_scheme"),
        ("gopher://127.0.0.1/", "bad_scheme"),
        ("ftp://example.com/", "bad_scheme"),
        ("http:/example.com/", "bad_url"),
        ("http:\\\\127.0.0.1\\", "bad_url"),
        ("http://exa mple.com/", "bad_url"),
        ("http://例え.jp/", "bad_url"),
        ("http://%31%32%37.0.0.1/", "bad_url"),
        ("http://256.0.0.1/", "ambiguous_host"),
        ("http://1.2.3.4.5/", "ambiguous_host"),
        ("http://4294967296/", "ambiguous_host"),
        ("http://08.0.0.1/", "ambiguous_host"),
        ("http://example.123/", "ambiguous_host"),
        ("http://example.com:0/", "bad_port"),
        ("http://example.com:65536/", "bad_port"),
        ("http://example.com:+80/", "bad_port"),
        ("http://example.com:80:80/", "bad_url"),
        ("http:///path", "bad_url"),
        ("http://exa_mple.com/", "bad_url"),
        ("http://" + "a" * 2050 + ".com/", "bad_url"),
    ],
)
def test_a_url_the_strict_reader_cannot_read_one_way_is_refused(url: str, reason: str) -> None:
    with pytest.raises(ToolExecutionError) as refused:
        OFFLINE.fetch(url)
    assert refused.value.reason == reason


def test_a_port_outside_the_allowed_ones_is_refused_before_resolving() -> None:
    with pytest.raises(ToolExecutionError) as refused:
        OFFLINE.fetch("http://example.com:22/")
    assert refused.value.reason == "port_not_allowed"


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("8.8.8.8", "8.8.8.8"),
        ("134744072", "8.8.8.8"),
        ("0x8.0x8.0x8.0x8", "8.8.8.8"),
        ("010.010.010.010", "8.8.8.8"),
        ("8.526344", "8.8.8.8"),
        ("[2606:4700:4700::1111]", "2606:4700:4700::1111"),
    ],
)
def test_a_public_address_reads_to_the_same_address_in_every_notation(
    text: str, address: str
) -> None:
    parsed = parse_http_url(f"http://{text}/x")
    assert str(parsed.address) == address
    assert parsed.address is not None and refused_address_reason(parsed.address) is None


def test_a_6to4_address_embedding_a_public_ipv4_is_not_refused_for_its_embedding() -> (
    None
):
    parsed = parse_http_url("http://[2002:808:808::1]/")
    assert parsed.address is not None
    assert refused_address_reason(parsed.address) is None


def test_the_fragment_is_dropped_and_the_host_is_lower_cased_without_its_trailing_dot() -> None:
    parsed = parse_http_url("HTTPS://Docs.Example.COM./a/b?q=1#frag")
    assert (parsed.host, parsed.port, parsed.target) == ("docs.example.com", 443, "/a/b?q=1")
    assert parsed.text == "https://docs.example.com/a/b?q=1"


def test_a_non_string_url_is_refused() -> None:
    with pytest.raises(UrlRefused):
        parse_http_url(["http://example.com/"])
