package jobs

import (
	"context"
	"net/url"
	"strconv"

	"lmtool.dev/lm/pkg/op"
)

// Resources are job://ID (a job's status) and joblog://ID?from=N (its
// output from a cursor).
func Resources() []op.Resource {
	return []op.Resource{
		{
			URITemplate: "job://{id}", Group: "jobs", Name: "job", MIMEType: "application/json",
			Description: "A job's status: state, times, exit code, bytes_emitted, truncated.",
			Read: func(ctx context.Context, env *op.Env, u *url.URL) (any, error) {
				return load(ctx, env, u.Host)
			},
		},
		{
			URITemplate: "joblog://{id}{?from}", Group: "jobs", Name: "joblog", MIMEType: "application/json",
			Description: "A job's output from cursor from (default 0): {from, to, data, evicted, eof}; read again from to.",
			Read: func(ctx context.Context, env *op.Env, u *url.URL) (any, error) {
				var from uint64
				if s := u.Query().Get("from"); s != "" {
					n, err := strconv.ParseUint(s, 10, 64)
					if err != nil {
						return nil, op.Errorf(op.KindInvalid, "from %q is not a byte offset", s)
					}
					from = n
				}
				return Logs(ctx, env, LogsInput{ID: u.Host, From: from})
			},
		},
	}
}
