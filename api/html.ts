const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML element content and attribute values. */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** A page with the service's stylesheet; `script`: the URL of a script of the service it loads. */
export function page(title: string, body: string, options: { script?: string } = {}): string {
  const script = options.script ? `<script src="${escapeHtml(options.script)}" defer></script>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">${script}
<title>${escapeHtml(title)}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:960px;margin:2rem auto;padding:0 1rem;color:#1f2328;line-height:1.5}
h1{font-size:1.4rem}.meta{color:#59636e;font-size:.9rem}.event{border-left:3px solid #d0d7de;margin:1rem 0;padding:.25rem 1rem}
.event.prompt,.event.followup{border-color:#0969da}.event.assistant{border-color:#1a7f37}.event.state{border-color:#8250df}
.event.error,.failed{border-color:#cf222e}.event.tool_call,.event.command{border-color:#bf8700}
.event.files_changed{border-color:#1a7f37}.command{font-family:ui-monospace,monospace;margin:.25rem 0}.command .prompt{color:#59636e}
.err{color:#cf222e}.file .path{font-family:ui-monospace,monospace;font-weight:600;margin-top:.5rem}
pre.diff{white-space:normal}pre.diff span{display:block;white-space:pre-wrap}pre.diff .add{background:#dafbe1;color:#116329}pre.diff .del{background:#ffebe9;color:#82071e}
pre.diff .hunk{color:#8250df}pre.diff .hdr{color:#59636e;font-weight:600}details.fold>summary{cursor:pointer;color:#0969da}.kind{font-weight:600;text-transform:uppercase;font-size:.75rem;color:#59636e}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.75rem;border-radius:6px}
</style></head><body>${body}</body></html>`;
}
