import { html, type SafeHtml } from "@remix-run/html-template"

/**
 * Headers for every server-rendered page: nothing but inline styles may load, forms post only to
 * this origin, no framing, and no referrer (page URLs can carry secrets such as connect tokens).
 * Browsers apply `form-action` to the redirect that answers a form too, so a page whose form
 * ends in a redirect elsewhere names that origin in `formRedirectOrigins`.
 */
export const pageHeaders = (formRedirectOrigins: ReadonlyArray<string> = []): Record<string, string> => ({
  "content-type": "text/html; charset=utf-8",
  "cache-control": "no-store",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "content-security-policy": `default-src 'none'; style-src 'unsafe-inline'; form-action ${
    ["'self'", ...formRedirectOrigins].join(" ")
  }; frame-ancestors 'none'; base-uri 'none'`
})

/** A complete page around `body` (built with the `html` tag, so escaped), titled `title`. */
export const page = (title: string, body: SafeHtml): string =>
  String(html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${title}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.4rem}label{display:block;margin:.8rem 0 .2rem;font-weight:600}
input{width:100%;padding:.5rem;box-sizing:border-box}small{color:#555}
.error{color:#b00020}button,.choice{display:inline-block;margin:.3rem 0;padding:.6rem 1rem}
</style>
</head>
<body>
${body}
</body>
</html>
`)
