package gateway

import (
	"errors"
	"net/http"

	"lmtool.dev/lm/pkg/guard"
	"lmtool.dev/lm/pkg/op"
)

// recovered answers a request whose handler panicked with a 500 and the
// error envelope, and keeps the gateway serving everyone else. net/http
// would recover too, but drops the connection without an answer.
func (s *Server) recovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		err := guard.Call(s.opts.Log, r.Method+" "+r.URL.Path, func() error {
			next.ServeHTTP(rec, r)
			return nil
		})
		var pe *guard.PanicError
		if !errors.As(err, &pe) {
			return
		}
		if pe.Value == http.ErrAbortHandler {
			panic(http.ErrAbortHandler) // the handler's way to abort: net/http handles it
		}
		if rec.status == 0 {
			writeError(w, http.StatusInternalServerError, op.Errorf(op.KindInternal, "the gateway failed while answering: %v", pe.Value))
		}
	})
}
