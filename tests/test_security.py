"""Hostile XML is refused with a SecurityError before any of it is interpreted."""

import time

import pytest
from helpers import write

import irscatter
from irscatter.errors import LoadError, SecurityError

BILLION_LAUGHS = """<?xml version="1.0"?>
<!DOCTYPE net [
 <!ENTITY a "aaaaaaaaaa">
 <!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">
 <!ENTITY c "&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;">
 <!ENTITY d "&c;&c;&c;&c;&c;&c;&c;&c;&c;&c;">
 <!ENTITY e "&d;&d;&d;&d;&d;&d;&d;&d;&d;&d;">
 <!ENTITY f "&e;&e;&e;&e;&e;&e;&e;&e;&e;&e;">
 <!ENTITY g "&f;&f;&f;&f;&f;&f;&f;&f;&f;&f;">
 <!ENTITY h "&g;&g;&g;&g;&g;&g;&g;&g;&g;&g;">
]>
<net name="&h;" version="11"><layers/></net>
"""

QUADRATIC = '<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY x "' + "x" * 100000 + '">]>\n<net name="' + "&x;" * 1000 + '" version="11"/>'


def _xxe(target: str) -> str:
    return f'<?xml version="1.0"?>\n<!DOCTYPE net [<!ENTITY x SYSTEM "{target}">]>\n<net name="&x;" version="11"><layers/></net>'


@pytest.mark.parametrize(
    "xml",
    [
        BILLION_LAUGHS,
        QUADRATIC,
        _xxe("file:///etc/passwd"),
        _xxe("http://127.0.0.1:9/x"),
        '<?xml version="1.0"?>\n<!DOCTYPE net SYSTEM "http://127.0.0.1:9/net.dtd">\n<net version="11"/>',
        '<?xml version="1.0"?>\n<!DOCTYPE net PUBLIC "-//x//y" "file:///etc/passwd">\n<net version="11"/>',
        '<?xml version="1.0"?>\n<!DOCTYPE net>\n<net version="11"><layers/></net>',
    ],
    ids=["billion-laughs", "quadratic-blowup", "xxe-file", "xxe-url", "external-dtd", "public-dtd", "bare-doctype"],
)
def test_hostile_documents_are_refused(tmp_path, xml):
    start = time.perf_counter()
    with pytest.raises(SecurityError, match="DOCTYPE") as info:
        irscatter.read_model(write(tmp_path, xml))
    assert time.perf_counter() - start < 5
    assert "root:" not in str(info.value)  # nothing of /etc/passwd leaks into the message


def test_undeclared_entity_is_a_parse_error(tmp_path):
    with pytest.raises(LoadError) as info:
        irscatter.read_model(write(tmp_path, '<net version="11" name="&x;"><layers/></net>'))
    assert not isinstance(info.value, SecurityError) and info.value.line == 1


def test_xinclude_is_not_processed(tmp_path):
    xml = ('<net version="11" xmlns:xi="http://www.w3.org/2001/XInclude"><layers>'
           '<xi:include href="file:///etc/passwd" parse="text"/></layers></net>')
    model = irscatter.read_model(write(tmp_path, xml))
    assert model.layers == []


def test_security_error_is_distinct_in_the_cli(tmp_path):
    from helpers import cli

    proc = cli("info", str(write(tmp_path, BILLION_LAUGHS)))
    assert proc.returncode == 1 and "DOCTYPE declarations are refused" in proc.stderr
    assert "Traceback" not in proc.stderr
