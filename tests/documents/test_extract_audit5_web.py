"""E-mail, HTML and text files people and mail programs write, and detection of
their type (fifth outside audit). Each file is built here, as its program writes
it; the defects pinned here were found by the audit."""

from __future__ import annotations

import base64
import codecs
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from documents.extractors import detect_format, extract
from documents.models import Document
from tests.files import pdf_bytes

UPLOAD_URL = "/documents/upload/"
API_URL = "/api/documents/"
HEADERS = (
    "From: Ann Lee <ann@example.org>\r\nTo: bob@example.org\r\n"
    "Subject: Minutes\r\nDate: Fri, 06 Sep 2019 12:00:00 +0000\r\n"
)


def read(tmp_path: Path, name: str, content: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return extract(path).text


def key(tmp_path: Path, content: bytes, name: str = "upload") -> str | None:
    path = tmp_path / name
    path.write_bytes(content)
    fmt = detect_format(path)
    return fmt.key if fmt else None


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def mail(*lines: str, body: bytes = b"") -> bytes:
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# --- What mail programs write: read in order, nothing hidden --------------------


def test_mail_from_common_programs_is_read_in_order(tmp_path: Path) -> None:
    # Outlook's quoted-printable alternatives, Gmail's subject split into two
    # base64 words, a Japanese phone's ISO-2022-JP, Outlook's Korean label.
    subject = "Réunion du comité".encode()
    outlook = mail(
        "From: =?iso-8859-1?Q?J=F6rg_M=FCller?= <jorg@example.de>",
        "Subject: =?UTF-8?B?" + b64(subject[:8]) + "?=\r\n =?UTF-8?B?"
        f"{b64(subject[8:])}?=",
        'Content-Type: multipart/alternative; boundary="_000_"',
        body=b"--_000_\r\nContent-Type: text/plain; charset=iso-8859-1\r\n"
        b"Content-Transfer-Encoding: quoted-printable\r\n\r\nVielen Dank f=FCr das"
        b" Tref=\r\nfen.\r\n--_000_\r\nContent-Type: text/html; charset=iso-8859-1"
        b"\r\n\r\n<p>Vielen Dank f\xfcr das Treffen.</p>\r\n--_000_--\r\n",
    )
    assert read(tmp_path, "outlook.eml", outlook).splitlines() == [
        "From: Jörg Müller <jorg@example.de>",
        "Subject: Réunion du comité",
        "",
        "Vielen Dank für das Treffen.",
    ]
    japanese = mail(
        "From: yamada@example.jp",
        "Subject: =?ISO-2022-JP?B?" + b64("会議の件".encode("iso2022_jp")) + "?=",
        "Content-Type: text/plain; charset=ISO-2022-JP",
        body="明日の会議は十時からです。".encode("iso2022_jp"),
    )
    assert read(tmp_path, "jp.eml", japanese).splitlines()[1:] == [
        "Subject: 会議の件",
        "",
        "明日の会議は十時からです。",
    ]
    korean = mail(
        "From: kim@example.kr",
        "Subject: =?ks_c_5601-1987?B?" + b64("회의 안내".encode("cp949")) + "?=",
        'Content-Type: text/plain; charset="ks_c_5601-1987"',
        "Content-Transfer-Encoding: base64",
        body=base64.encodebytes("월요일입니다.".encode("cp949")),
    )
    assert read(tmp_path, "kr.eml", korean).splitlines()[1:] == [
        "Subject: 회의 안내",
        "",
        "월요일입니다.",
    ]


def test_encoded_words_are_read_in_the_charsets_mail_programs_use(
    tmp_path: Path,
) -> None:
    # Outlook labels Windows-1252 as ISO-8859-1 (its curly quote, 0x92, was
    # dropped as a control), and Chinese mailers GBK as GB2312 (镕 became "�F"),
    # in subjects and in attachments' names alike.
    name = "=?gb2312?B?" + b64("朱镕基.txt".encode("gbk")) + "?="
    content = mail(
        "From: li@example.cn",
        "Subject: =?iso-8859-1?Q?It=92s_done?=",
        "Cc: =?gb2312?B?" + b64("朱镕基".encode("gbk")) + "?= <zhu@example.cn>",
        'Content-Type: multipart/mixed; boundary="b"',
        body=(
            "--b\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n--b\r\n"
            f'Content-Type: text/plain; charset=gbk; name="{name}"\r\n'
            f'Content-Disposition: attachment; filename="{name}"\r\n\r\n'
        ).encode()
        + "讲话全文。".encode("gbk")
        + b"\r\n--b--\r\n",
    )
    assert read(tmp_path, "mail.eml", content).splitlines() == [
        "From: li@example.cn",
        "Cc: 朱镕基 <zhu@example.cn>",
        "Subject: It’s done",
        "",
        "See attached.",
        "",
        "Attachment: 朱镕基.txt",
        "讲话全文。",
        "",
        "Attachments: 朱镕基.txt",
    ]


FORWARDED = (
    b"From: carol@example.com\r\nSubject: Original plan\r\n\r\nThe original words.\r\n"
)


@pytest.mark.parametrize(
    "attached",
    [
        # Exchange sends a forwarded message in base64, which RFC 2046 forbids:
        # its base64 was shown as the text, the message left unread.
        b"Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n"
        b"Content-Disposition: attachment\r\n\r\n" + base64.encodebytes(FORWARDED),
        # An .eml file dragged into a message goes as a file of no known type:
        # it was named only, where a forwarded one is read.
        b"Content-Type: application/octet-stream; name=plan.eml\r\n"
        b"Content-Disposition: attachment; filename=plan.eml\r\n"
        b"Content-Transfer-Encoding: base64\r\n\r\n" + base64.encodebytes(FORWARDED),
    ],
    ids=["rfc822-in-base64", "eml-file"],
)
def test_a_forwarded_message_is_read_however_it_is_attached(
    tmp_path: Path, attached: bytes
) -> None:
    content = mail(
        HEADERS.strip(),
        'Content-Type: multipart/mixed; boundary="f"',
        body=b"--f\r\nContent-Type: text/plain\r\n\r\nSee below.\r\n--f\r\n"
        + attached
        + b"--f--\r\n",
    )
    text = read(tmp_path, "fwd.eml", content)
    lines = text.splitlines()
    assert lines[lines.index("See below.") :][:6] == [
        "See below.",
        "",
        "From: carol@example.com",
        "Subject: Original plan",
        "",
        "The original words.",
    ]
    assert "RnJvbT" not in text  # base64 of "From:"


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: codecs.BOM_UTF8 + text.encode(),
        lambda text: text.encode("utf-16"),
    ],
    ids=["utf-8-bom", "utf-16"],
)
def test_a_message_saved_by_notepad_or_powershell_is_read_as_mail(
    tmp_path: Path, encode
) -> None:
    # Notepad writes a byte-order mark, Windows PowerShell's ">" UTF-16: the
    # headers were read as body text, unparsed, and without a name the file
    # was not recognised as mail at all.
    content = encode(HEADERS + "\r\nThe minutes are attached.\r\n")
    assert key(tmp_path, content) == "eml"
    assert read(tmp_path, "minutes.eml", content).splitlines() == [
        "From: Ann Lee <ann@example.org>",
        "To: bob@example.org",
        "Subject: Minutes",
        "Date: Fri, 06 Sep 2019 12:00:00 +0000",
        "",
        "The minutes are attached.",
    ]


def test_an_html_body_s_page_title_is_not_read(tmp_path: Path) -> None:
    # Mail programs show no title of an HTML body: a template's "Untitled
    # Document" opened the text.
    content = mail(
        HEADERS.strip(),
        "Content-Type: text/html; charset=utf-8",
        body=b"<html><head><title>Untitled Document</title></head>"
        b"<body><p>Our October offers.</p></body></html>",
    )
    assert read(tmp_path, "offers.eml", content).splitlines()[-2:] == [
        "",
        "Our October offers.",
    ]


def test_an_encrypted_message_says_only_its_headers_were_read(
    tmp_path: Path,
) -> None:
    content = mail(
        HEADERS.strip(),
        'Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"',
        "Content-Transfer-Encoding: base64",
        'Content-Disposition: attachment; filename="smime.p7m"',
        body=b"MIAGCSqGSIb3DQEHA6CAMIACAQAxggFwMIIBbAIBADBUMEAxCzAJBgNVBAYTAkRF\r\n",
    )
    path = tmp_path / "sealed.eml"
    path.write_bytes(content)
    result = extract(path)
    assert "Subject: Minutes" in result.text
    assert "encrypted" in result.note and "only its headers" in result.note


# --- Detection: what a file is, from its bytes -----------------------------------

# Microsoft 365 and relays write some 20 KiB of headers before the From.
RELAYS = "".join(
    f"Received: from relay{n}.example.net (relay{n}.example.net [10.0.0.{n}])\r\n"
    f"\tby mx.example.com with ESMTPS id {n:08x}; Mon, 9 Sep 2019 09:00:00 +0000\r\n"
    for n in range(160)
)


def test_a_message_with_long_headers_is_recognised_as_mail(tmp_path: Path) -> None:
    assert len(RELAYS) > 16384
    content = (RELAYS + HEADERS + "\r\nBody.\r\n").encode()
    assert key(tmp_path, content) == "eml"
    # A header block the prefix (64 KiB) cuts, a name cut in two at its end.
    head = (HEADERS + RELAYS).encode()
    filler = b"X-Filler: " + b"a" * (65536 - len("X-Micro") - len(head) - 12) + b"\r\n"
    cut = head + filler + b"X-Microsoft-Antispam: BCL:0;\r\n" * 100
    assert cut[65529:65536] == b"X-Micro"
    assert key(tmp_path, cut) == "eml"


@pytest.mark.parametrize(
    ("name", "expected"),
    [("saved", "text/html"), ("saved.txt", "text/html"), ("saved.htm", "text/html")],
)
def test_a_page_a_browser_saved_is_html_after_its_comment(
    user_client, tmp_path: Path, name: str, expected: str
) -> None:
    # Browsers write "<!-- saved from url=... -->" before the doctype: with no
    # name, or a plain-text one, the page was read as text, scripts and all.
    page = (
        b"<!-- saved from url=(0022)http://example.com/ -->\r\n<!DOCTYPE html>"
        b"<html><head><title>Tide table</title><script>track()</script></head>"
        b"<body><p>High water at 06:12.</p></body></html>"
    )
    assert read(tmp_path, name, page) == "Tide table\nHigh water at 06:12."
    response = user_client.post(API_URL, {"file": SimpleUploadedFile(name, page)})
    assert response.status_code == 202, response.content
    assert Document.objects.get().mime_type == expected


README_ABOUT_PDF = (
    b"# pdf-probe\n\nChecks that every upload starts with the `%PDF-1.7` header\n"
    b"and reports the files that do not.\n"
)


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("README.md", README_ABOUT_PDF, "text/markdown"),
        (
            "notes.txt",
            b"A PDF opens with %PDF-1.4 and a GIF with GIF89a.\n",
            "text/plain",
        ),
        ("notes", b"Log: header %PDF-1.5\nfound in scan.pdf\n", "text/plain"),
    ],
)
def test_text_that_mentions_a_pdf_header_is_text(
    user_client, tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    # "%PDF-" anywhere in the first KiB made a file a PDF: the upload was refused
    # as "named like a Markdown file but its contents are PDF", or read as a
    # damaged PDF.
    assert read(tmp_path, name, content) == content.decode()
    response = user_client.post(UPLOAD_URL, {"file": SimpleUploadedFile(name, content)})
    assert response.status_code == 302
    assert Document.objects.get().mime_type == expected


def test_a_pdf_after_junk_is_still_a_pdf(tmp_path: Path) -> None:
    # What the rule above keeps: a PDF saved with the server's HTTP headers.
    content = b"HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\n\r\n" + pdf_bytes(
        "Saved with its headers"
    )
    assert key(tmp_path, content) == "pdf"
    assert read(tmp_path, "saved.pdf", content) == "Saved with its headers (page 1)"
