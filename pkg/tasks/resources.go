package tasks

import (
	"context"
	"net/url"

	"lmtool.dev/lm/pkg/op"
)

// Resources is tasks://cwd: the tasks of the server's working directory.
func Resources() []op.Resource {
	return []op.Resource{{
		URITemplate: "tasks://cwd", Group: "tasks", Name: "tasks", MIMEType: "application/json",
		Description: "The tasks defined in the server's working directory, with unique names.",
		Read: func(ctx context.Context, env *op.Env, _ *url.URL) (any, error) {
			return List(ctx, env, ListInput{})
		},
	}}
}
