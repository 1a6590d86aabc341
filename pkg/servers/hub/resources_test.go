package hub

import (
	"cmp"
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/yosida95/uritemplate/v3"

	"lmtool.dev/lm/pkg/npmtest"
	"lmtool.dev/lm/pkg/servers"
)

func TestNamespacedURIRoundTrips(t *testing.T) {
	for _, uri := range []string{
		"demo://resource/static/document/architecture.md",
		"file:///home/me/notes%20and%20plans.txt",
		"https://example.com/a/b?x=1&y=%2F#frag",
		"urn:isbn:0451450523",
		"memo://insights",
	} {
		ns := NamespacedURI("my-server_2", uri)
		u, err := url.Parse(ns)
		if err != nil || u.Scheme != ResourceScheme || u.Host != "my-server_2" {
			t.Errorf("%s → %s is not an RFC 3986 URI naming the server: %+v %v", uri, ns, u, err)
		}
		server, original, err := SplitURI(ns)
		if err != nil || server != "my-server_2" || original != uri {
			t.Errorf("%s → %s → %q %q %v", uri, ns, server, original, err)
		}
	}
	for _, bad := range []string{"demo://resource/x", "lm-server:everything", "lm-server://everything", "lm-server://everything/", "lm-server:///demo://x"} {
		if _, _, err := SplitURI(bad); err == nil || !strings.Contains(err.Error(), ResourceScheme+"://SERVER/URI") {
			t.Errorf("SplitURI(%q) must say what is accepted: %v", bad, err)
		}
	}
}

// TestResourcesOnMCPAreNamespaced reads server-everything's resources
// through /mcp under lm-server:// URIs: listed ones, its templates
// expanded by the client, and the links and embedded resources its tools
// and prompts return; its own endpoint keeps its URIs.
func TestResourcesOnMCPAreNamespaced(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	h, base := startHubWith(t, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true}}}`, io.Discard, true)
	if s := settled(t, h, "everything"); s.State != servers.Running {
		t.Fatalf("%+v", s)
	}
	cl := connect(t, base+"/mcp")
	own := connect(t, base+"/mcp/everything")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const prefix = "lm-server://everything/"

	// resources/list → resources/read.
	list, err := cl.ListResources(ctx, mcp.ListResourcesRequest{})
	if err != nil || len(list.Resources) == 0 {
		t.Fatalf("%+v %v", list, err)
	}
	for _, r := range list.Resources {
		if !strings.HasPrefix(r.URI, prefix+"demo://") || !strings.HasPrefix(r.Name, "everything__") {
			t.Errorf("resource %q (%s) is not namespaced", r.URI, r.Name)
		}
	}
	listed := list.Resources[0].URI
	got := read(t, cl, listed)
	want := read(t, own, strings.TrimPrefix(listed, prefix))
	if got.URI != listed || got.Text == "" || got.Text != want.Text {
		t.Fatalf("read %s: %+v; the server's own endpoint gives %+v", listed, got, want)
	}

	// A template, expanded by the client, reads through.
	templates, err := cl.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var text *mcp.ResourceTemplate
	for i, tpl := range templates.ResourceTemplates {
		if tpl.URITemplate.Raw() == prefix+"demo://resource/dynamic/text/{resourceId}" {
			text = &templates.ResourceTemplates[i]
		}
	}
	if text == nil || text.Name != "everything__Dynamic_Text_Resource" {
		t.Fatalf("the text template is not on /mcp, namespaced: %+v", templates.ResourceTemplates)
	}
	expanded, err := text.URITemplate.Expand(uritemplate.Values{"resourceId": uritemplate.String("7")})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, cl, expanded); got.URI != expanded || !strings.HasPrefix(got.Text, "Resource 7: This is a plaintext resource") {
		t.Fatalf("read %s: %+v", expanded, got)
	}
	// The server's own endpoint has its templates as they are.
	ownTemplates, err := own.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
	if err != nil || len(ownTemplates.ResourceTemplates) != 2 || strings.HasPrefix(ownTemplates.ResourceTemplates[0].URITemplate.Raw(), ResourceScheme) {
		t.Fatalf("/mcp/everything templates: %+v %v", ownTemplates, err)
	}
	if got := read(t, own, "demo://resource/dynamic/text/7"); got.URI != "demo://resource/dynamic/text/7" {
		t.Fatalf("/mcp/everything read of a template's URI: %+v", got)
	}

	// A tool's resource links can be read back from /mcp.
	res, err := call(t, cl, "everything__get-resource-links", map[string]any{"count": 2})
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, c := range res.Content {
		if l, ok := c.(mcp.ResourceLink); ok {
			links = append(links, l.URI)
		}
	}
	if len(links) != 2 {
		t.Fatalf("links: %+v", res.Content)
	}
	for _, link := range links {
		if !strings.HasPrefix(link, prefix+"demo://resource/dynamic/") {
			t.Fatalf("a link on /mcp must name the server: %s", link)
		}
		if got := read(t, cl, link); got.URI != link || (got.Text == "" && got.Blob == "") {
			t.Fatalf("read %s: %+v", link, got)
		}
	}
	// … as is an embedded resource's URI, and a prompt's.
	res, err = call(t, cl, "everything__get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 3})
	if err != nil || embeddedURI(res.Content) != prefix+"demo://resource/dynamic/text/3" {
		t.Fatalf("embedded resource: %+v %v", res, err)
	}
	prompt, err := cl.GetPrompt(ctx, mcp.GetPromptRequest{Params: mcp.GetPromptParams{Name: "everything__resource-prompt",
		Arguments: map[string]string{"resourceType": "Text", "resourceId": "4"}}})
	if err != nil {
		t.Fatal(err)
	}
	var promptContent []mcp.Content
	for _, m := range prompt.Messages {
		promptContent = append(promptContent, m.Content)
	}
	if got := embeddedURI(promptContent); got != prefix+"demo://resource/dynamic/text/4" {
		t.Fatalf("the prompt's embedded resource: %q in %+v", got, prompt.Messages)
	}
	// The server's own endpoint returns its URIs unchanged, even for a
	// result /mcp's call left in the cache.
	res, err = call(t, own, "get-resource-reference", map[string]any{"resourceType": "Text", "resourceId": 3})
	if err != nil || embeddedURI(res.Content) != "demo://resource/dynamic/text/3" {
		t.Fatalf("/mcp/everything: %+v %v", res, err)
	}

	// An unknown server or a URI that is not /mcp's: a clear error.
	for uri, want := range map[string]string{
		"lm-server://nosuch/demo://resource/static/document/architecture.md": `names no configured server "nosuch"`,
		"lm-server://everything/":                            "lm-server://SERVER/URI",
		prefix + "demo://resource/dynamic/text/not-a-number": "Unknown resource",
	} {
		_, err := cl.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("read %s: want an error saying %q, got %v", uri, want, err)
		}
	}
}

// TestResourceUpdatesAreRelayedNamespaced: a server's resources/updated
// reaches /mcp's clients under /mcp's URI, its own endpoint's under its
// own, and drops the cached read.
func TestResourceUpdatesAreRelayedNamespaced(t *testing.T) {
	everything := npmtest.Skip(t, "mcp-server-everything")
	h, base := startHubWith(t, `{"mcpServers": {"everything": {"command": "`+everything+`", "auto_start": true,
		"cache_resources": ["demo://resource/static/document/*"]}}}`, io.Discard, true)
	settled(t, h, "everything")
	agg := connect(t, base+"/mcp", transport.WithContinuousListening())
	own := connect(t, base+"/mcp/everything", transport.WithContinuousListening())
	aggURIs, ownURIs := updates(agg), updates(own)
	const uri = "demo://resource/static/document/architecture.md"
	read(t, agg, NamespacedURI("everything", uri))
	read(t, own, uri)
	if st := h.CacheStats(); st.Entries != 1 || st.Hits != 1 {
		t.Fatalf("/mcp and /mcp/everything share the cached read: %+v", st)
	}
	updated := func() {
		h.upstreamNotification(h.child("everything"), mcp.JSONRPCNotification{Notification: mcp.Notification{Method: mcp.MethodNotificationResourceUpdated,
			Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": uri}}}})
	}
	updated()
	if st := h.CacheStats(); st.Entries != 0 {
		t.Fatalf("resources/updated must drop the cached read: %+v", st)
	}
	// The clients' notification streams open in the background: the
	// server says it again until they hear it (bounded at 10 s).
	var aggGot, ownGot string
	for i := 0; i < 50 && (aggGot == "" || ownGot == ""); i++ {
		if i > 0 {
			updated()
		}
		aggGot, ownGot = cmp.Or(aggGot, aggURIs()), cmp.Or(ownGot, ownURIs())
	}
	if aggGot != NamespacedURI("everything", uri) {
		t.Errorf("/mcp was told of %q", aggGot)
	}
	if ownGot != uri {
		t.Errorf("/mcp/everything was told of %q", ownGot)
	}
}

// updates returns a function that waits briefly for the next
// resources/updated the client receives and returns its URI, or "".
func updates(cl *client.Client) func() string {
	ch := make(chan string, 64)
	cl.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == mcp.MethodNotificationResourceUpdated {
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			select {
			case ch <- uri:
			default:
			}
		}
	})
	return func() string {
		select {
		case uri := <-ch:
			return uri
		case <-time.After(100 * time.Millisecond):
			return ""
		}
	}
}

// A resource is read afresh every time unless the person listed it in
// cache_resources: one that embeds the time must not be served stale.
func TestResourcesAreCachedOnlyWhereThePersonSaidSo(t *testing.T) {
	for _, c := range []struct {
		name, extra string
		cached      bool
	}{
		{"by default", ``, false},
		{"listed in cache_resources", `, "cache_resources": ["clock://*"]`, true},
		{"another pattern listed", `, "cache_resources": ["file:///*"]`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, base := startHub(t, `{"mcpServers": {"clock": {`+childServer(t, "clock", nil)+`, "auto_start": true`+c.extra+`}}}`)
			awaitState(t, h, "clock", servers.Running, 20*time.Second)
			cl := connect(t, base+"/mcp/clock")
			first, second := read(t, cl, "clock://now"), read(t, cl, "clock://now")
			if (first.Text == second.Text) != c.cached {
				t.Fatalf("two reads gave %s and %s; cached: want %v", first.Text, second.Text, c.cached)
			}
		})
	}
}

type contents struct{ URI, Text, Blob string }

func read(t *testing.T, cl *client.Client, uri string) contents {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cl.ReadResource(ctx, mcp.ReadResourceRequest{Params: mcp.ReadResourceParams{URI: uri}})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("read %s: %+v", uri, res.Contents)
	}
	switch c := res.Contents[0].(type) {
	case mcp.TextResourceContents:
		return contents{URI: c.URI, Text: c.Text}
	case mcp.BlobResourceContents:
		return contents{URI: c.URI, Blob: c.Blob}
	}
	t.Fatalf("read %s: %T", uri, res.Contents[0])
	return contents{}
}

func embeddedURI(content []mcp.Content) string {
	for _, c := range content {
		if e, ok := c.(mcp.EmbeddedResource); ok {
			switch r := e.Resource.(type) {
			case mcp.TextResourceContents:
				return r.URI
			case mcp.BlobResourceContents:
				return r.URI
			}
		}
	}
	return ""
}
