package servers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"

	"lmtool.dev/lm/pkg/op"
)

// The control socket's client: the CLI and the operations reach a running
// gateway through $LM_HOME/gateway.sock, whose owner-only mode is the
// authentication; no gateway listening is "unavailable" (exit 6) with a
// hint to start one, and an error the gateway reports keeps its kind.

// SocketName is the gateway's control socket inside LM_HOME. It speaks the
// gateway's own /servers and /health routes over HTTP; the socket's 0600
// mode is the authentication, so the CLI needs no token.
const SocketName = "gateway.sock"

// SocketPath is the control socket in home.
func SocketPath(home string) string { return filepath.Join(home, SocketName) }

// Control talks to a running gateway over its control socket.
type Control struct {
	path   string
	client *http.Client
}

// NewControl is a client for the gateway whose LM_HOME is home.
func NewControl(home string) *Control {
	path := SocketPath(home)
	return &Control{path: path, client: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		},
	}}}
}

// ErrNoGateway is returned when no gateway listens on the control socket.
var ErrNoGateway = errors.New("no gateway is running")

// Do sends a request to the gateway and decodes its JSON answer into out
// (when not nil). Errors the gateway reports come back with their kind, so
// the CLI exits as if it had done the work itself.
func (c *Control) Do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gateway"+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ENOENT) {
			return op.Errorf(op.KindUnavailable, "%w (no control socket at %s)", ErrNoGateway, c.path).
				WithCategory("gateway_not_running").WithHint("start it with 'lm gateway start' (or run 'lm gateway' in a terminal)")
		}
		return op.Errorf(op.KindUnavailable, "reach the gateway at %s: %w", c.path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return op.Errorf(op.KindUnavailable, "read the gateway's answer: %w", err)
	}
	if resp.StatusCode >= 300 {
		var env op.Envelope
		if json.Unmarshal(data, &env) != nil || env.Error == "" {
			return op.Errorf(op.KindInternal, "gateway answered %s: %s", resp.Status, bytes.TrimSpace(data))
		}
		e := op.Errorf(env.Kind(), "%s", env.Error).WithCategory(env.ErrorCategory)
		if env.Suggestion != "" {
			e = e.WithHint("%s", env.Suggestion)
		}
		return e
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return op.Errorf(op.KindInternal, "decode the gateway's answer: %w", err)
	}
	return nil
}

// Reload asks a running gateway to re-read servers.json; without a gateway
// there is nothing to tell, and the next one reads the file as it starts.
func Reload(ctx context.Context, home string) error {
	err := NewControl(home).Do(ctx, http.MethodPost, "/servers/reload", nil, nil)
	if errors.Is(err, ErrNoGateway) {
		return nil
	}
	return err
}
