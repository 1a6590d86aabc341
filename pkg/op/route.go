package op

import (
	"fmt"
	"net/http"
	"strings"
)

// Route puts an operation on the gateway's HTTP API (rclone's rc calls
// are all on HTTP the same way): the gateway serves it, and its OpenAPI
// document and /docs page describe it, from this declaration and the
// operation's own input and output schemas. The request's input is the
// JSON body (with Body) or the query parameters (without), plus each
// {wildcard} of Path as the input field of the same name; the output is
// the response body.
type Route struct {
	// Method is the HTTP method: GET, POST, PUT, PATCH or DELETE.
	Method string
	// Path is a net/http pattern below the gateway's root
	// ("/api/instructions/{id}"). Each {wildcard} binds the input field
	// it names, which the body then does not take.
	Path string
	// Summary describes the route in the API's documents; the operation's
	// Summary when empty.
	Summary string
	// Status is the status of a success (200 when zero); 204 sends no
	// body.
	Status int
	// Body says the request carries the input as a JSON object.
	Body bool
	// PersonOnly narrows the route to the person whoever the operation
	// admits on other faces: running a tool call from the page is the
	// person's Approve, which an agent's token never stands in for.
	PersonOnly bool
}

// SuccessStatus is the route's status on success.
func (r Route) SuccessStatus() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// Wildcards are the input fields the route's path binds, in path order.
func (r Route) Wildcards() []string {
	var names []string
	for _, seg := range strings.Split(r.Path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			names = append(names, strings.TrimSuffix(name, "}"))
		}
	}
	return names
}

// Pattern is the route as a net/http ServeMux pattern ("GET /api/status").
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// check reports a route that cannot be served as declared: a method
// outside the API's, a path that is not absolute, or a wildcard that names
// no input field.
func (r Route) check(fields map[string]bool) error {
	switch r.Method {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
	default:
		return fmt.Errorf("route %s: method %q is not GET, POST, PUT, PATCH or DELETE", r.Pattern(), r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") {
		return fmt.Errorf("route %s: the path must start with /", r.Pattern())
	}
	for _, w := range r.Wildcards() {
		if !fields[w] {
			return fmt.Errorf("route %s: wildcard {%s} is not an input field", r.Pattern(), w)
		}
	}
	return nil
}
