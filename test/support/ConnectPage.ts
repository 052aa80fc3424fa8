/**
 * A customer's browser on a running host's connect page, without the browser: fetch the form for
 * `channelType`, keep its CSRF cookie and hidden field, and return a function that posts the form
 * back with the given inputs (redirects not followed).
 */
export const openConnectForm = async (connectUrl: string, channelType: string) => {
  const form = await fetch(`${connectUrl}?type=${channelType}`)
  const html = await form.text()
  const cookie = (form.headers.get("set-cookie") ?? "").split(";")[0]!
  const csrf = /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? ""
  return (inputs: Readonly<Record<string, string>>): Promise<Response> =>
    fetch(connectUrl, {
      method: "POST",
      redirect: "manual",
      headers: { "content-type": "application/x-www-form-urlencoded", cookie },
      body: new URLSearchParams({ csrf, channel_type: channelType, ...inputs }).toString()
    })
}
