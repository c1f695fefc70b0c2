"""Writes a minimal .docx sales report from a CSV (Python stdlib only).

Every run differs on purpose, as real document tools do: the document gets
a random reference and the creation time, and the zip entries their
timestamps. reel.toml masks the reference; the built-in masks handle the
time; the rerun compares the zip by its entries' text.
"""
import csv
import datetime
import secrets
import sys
import zipfile
from xml.sax.saxutils import escape

src, out = sys.argv[1], sys.argv[2]
with open(src, newline="") as f:
    rows = list(csv.DictReader(f))
total = sum(int(r["amount"]) for r in rows)
ref = secrets.token_hex(4)
now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
paras = [f"Sales report (reference {ref})", f"Rows: {len(rows)}", f"Total: {total}"]
body = "".join(f"<w:p><w:r><w:t>{escape(p)}</w:t></w:r></w:p>" for p in paras)
document = f'<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>'
core = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" '
    'xmlns:dcterms="http://purl.org/dc/terms/">'
    f"<dcterms:created>{now}</dcterms:created></cp:coreProperties>"
)
types = (
    '<?xml version="1.0" encoding="UTF-8"?>'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="xml" ContentType="application/xml"/></Types>'
)
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("[Content_Types].xml", types)
    z.writestr("docProps/core.xml", core)
    z.writestr("word/document.xml", document)
print(f"report {ref} written to {out}")
print(f"rows={len(rows)} total={total}")
