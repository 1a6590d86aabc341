package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"lmtool.dev/lm/pkg/gateway"
)

// crossOriginPage is a web client of the gateway served from elsewhere, as
// spec 002's own web app is: it calls with fetch and an agent's token,
// opens /sse with a ticket (EventSource sends no headers), runs a tool
// through /messages and follows the queue's events with the person's
// ticket. #out shows how far it got, as JSON.
const crossOriginPage = `<!doctype html><meta charset="utf-8"><title>elsewhere</title><pre id="out">{}</pre>
<script type="module">
const [GW, AGENT, PERSON] = %s;
const results = {};
const note = (k, v) => { results[k] = v; document.getElementById("out").textContent = JSON.stringify(results); };
const ticket = async (token) => (await (await fetch(GW + "/api/tickets", { method: "POST", headers: { Authorization: "Bearer " + token } })).json()).ticket;
const opened = (es) => new Promise((ok, fail) => { es.onopen = ok; es.onerror = () => fail(new Error("the stream failed")); });
try {
  const info = await (await fetch(GW + "/info", { headers: { Authorization: "Bearer " + AGENT } })).json();
  note("info", info.name);
  const sse = new EventSource(GW + "/sse?ticket=" + encodeURIComponent(await ticket(AGENT)));
  const clientId = await new Promise((ok, fail) => {
    sse.addEventListener("connected", (e) => ok(JSON.parse(e.data).clientId));
    sse.onerror = () => fail(new Error("/sse failed"));
  });
  note("connected", !!clientId);
  const result = new Promise((ok) => sse.addEventListener("tool_result", (e) => ok(JSON.parse(e.data))));
  const posted = await fetch(GW + "/messages", { method: "POST", headers: { Authorization: "Bearer " + AGENT, "Content-Type": "application/json" },
    body: JSON.stringify({ clientId, tool: "servers_list", parameters: {} }) });
  note("posted", posted.status);
  note("result", (await result).success);
  sse.close();
  const events = new EventSource(GW + "/api/events?ticket=" + encodeURIComponent(await ticket(PERSON)));
  const created = new Promise((ok) => events.addEventListener("instruction.created", (e) => ok(JSON.parse(e.data))));
  await opened(events);
  note("events", "open");
  note("created", JSON.stringify(await created));
  events.close();
} catch (err) {
  note("error", String(err));
}
</script>`

// A page on an origin the person allowed uses the gateway from a real
// browser — fetch with a token, EventSource with tickets; the same page on
// an origin not allowed gets nothing.
func TestPageOnAnotherOriginInBrowser(t *testing.T) {
	ctx := browser(t)
	var gwURL, agent, person string
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		args, _ := json.Marshal([]string{gwURL, agent, person})
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(strings.Replace(crossOriginPage, "%s", string(args), 1)))
	})
	allowed := httptest.NewServer(page)
	defer allowed.Close()
	foreign := httptest.NewServer(page)
	defer foreign.Close()

	g := start(t, gateway.Options{AllowOrigins: []string{allowed.URL}})
	gwURL, person = g.url, personToken
	agent = strings.TrimPrefix(g.agentHeaders("webapp")["Authorization"], "Bearer ")

	if err := chromedp.Do(ctx, chromedp.Navigate(allowed.URL)); err != nil {
		t.Fatal(err)
	}
	out := waitText(t, ctx, "#out", func(s string) bool { return strings.Contains(s, `"events":"open"`) || strings.Contains(s, `"error"`) }, "the allowed page")
	if !strings.Contains(out, `"events":"open"`) || !strings.Contains(out, `"info":"lm"`) || !strings.Contains(out, `"connected":true`) || !strings.Contains(out, `"posted":202`) || !strings.Contains(out, `"result":true`) {
		t.Fatalf("the allowed page: %s", out)
	}
	g.lm("queue", "add", "seen across origins")
	waitText(t, ctx, "#out", contains(`seen across origins`), "the allowed page's queue events")

	if err := chromedp.Do(ctx, chromedp.Navigate(foreign.URL)); err != nil {
		t.Fatal(err)
	}
	out = waitText(t, ctx, "#out", contains(`"error"`), "the foreign page")
	if strings.Contains(out, `"info"`) || !strings.Contains(out, "Failed to fetch") {
		t.Fatalf("the page on an origin not allowed: %s", out)
	}
}
