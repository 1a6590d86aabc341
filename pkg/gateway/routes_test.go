package gateway

import (
	"fmt"
	"slices"
	"testing"

	"lmtool.dev/lm/pkg/registry"
)

// TestAPIRoutesComeFromTheRegistry: the HTTP API the page and spec clients
// use is exactly what the operations declare — each route's method, path,
// operation, success status, body and caller narrowing — so a route cannot
// appear, vanish or change shape except in an operation's definition.
func TestAPIRoutesComeFromTheRegistry(t *testing.T) {
	want := []string{
		"DELETE /api/instructions/{id} queue_rm 204 body=false person=false",
		"DELETE /api/servers/{name} servers_rm 200 body=false person=false",
		"GET /api/config queue_config 200 body=false person=false",
		"GET /api/history servers_history 200 body=false person=false",
		"GET /api/instructions queue_list 200 body=false person=false",
		"GET /api/instructions/{id} queue_show 200 body=false person=false",
		"GET /api/servers servers_list 200 body=false person=false",
		"GET /api/servers/{server}/tools servers_tools 200 body=false person=false",
		"GET /api/status queue_status 200 body=false person=false",
		"PATCH /api/config queue_config 200 body=true person=false",
		"PATCH /api/instructions/{id} queue_edit 200 body=true person=false",
		"POST /api/ask servers_ask 200 body=true person=false",
		"POST /api/call servers_call 200 body=true person=true",
		"POST /api/instructions queue_add 201 body=true person=false",
		"POST /api/instructions/{id}/move queue_move 200 body=true person=false",
		"POST /api/instructions/{id}/requeue queue_requeue 200 body=false person=false",
		"POST /api/servers servers_add 201 body=true person=false",
		"POST /api/servers/install servers_install 201 body=true person=false",
	}
	var got []string
	for _, rt := range apiRoutes(registry.All()) {
		got = append(got, fmt.Sprintf("%s %s %d body=%t person=%t", rt.Pattern(), rt.tool(), rt.SuccessStatus(), rt.Body, rt.PersonOnly))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the registry's routes are\n%q\nwant\n%q", got, want)
	}
}
