package client

import (
	"context"
	"strings"

	"lmtool.dev/lm/pkg/op"
)

// HistoryInput filters the history.
type HistoryInput struct {
	Target string `json:"target,omitempty" jsonschema:"only calls to this target (a server name, URL or command line as history shows it)"`
	Tool   string `json:"tool,omitempty" jsonschema:"only calls of this tool"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many of the latest calls (default 100)"`
}

// HistoryOutput lists recorded calls, oldest first.
type HistoryOutput struct {
	Items []Record `json:"items"`
}

// History lists the recorded calls.
func History(ctx context.Context, env *op.Env, in HistoryInput) (HistoryOutput, error) {
	items, err := history(ctx, env, func(r Record) bool {
		return (in.Target == "" || r.Target.String() == in.Target) && (in.Tool == "" || r.Tool == in.Tool)
	})
	limit := in.Limit
	if limit <= 0 {
		limit = 100
	}
	if len(items) > limit {
		items = items[len(items)-limit:]
	}
	return HistoryOutput{Items: items}, err
}

// IDInput names a recorded call.
type IDInput struct {
	ID     string `json:"id" jsonschema:"the call's id (h_…)"`
	Bearer string `json:"bearer,omitempty" jsonschema:"a bearer token for a URL target (default $LM_SERVER_TOKEN)"`
}

// Rerun runs a recorded call again, as a new entry in the history.
func Rerun(ctx context.Context, env *op.Env, in IDInput) (CallOutput, error) {
	r, err := historyRecord(ctx, env, in.ID)
	if err != nil {
		return CallOutput{}, err
	}
	return runSaved(ctx, env, r.Target, in.Bearer, r.Tool, r.Arguments)
}

// runSaved runs a call kept in the store.
func runSaved(ctx context.Context, env *op.Env, t Target, bearer, tool string, args map[string]any) (CallOutput, error) {
	if len(t.Dropped) > 0 {
		return CallOutput{}, op.Errorf(op.KindInvalid, "%s was called with credentials lm does not keep: %s", t, strings.Join(t.Dropped, ", ")).
			WithHint("call it again with its --url and --header: lm servers call %s …", tool)
	}
	if bearer != "" && t.URL != "" {
		t.Headers = mapWith(t.Headers, "Authorization", "Bearer "+bearer)
	}
	s, err := openTarget(ctx, env, t)
	if err != nil {
		return CallOutput{}, err
	}
	defer s.Close()
	spec, err := s.Tool(ctx, tool)
	if err != nil {
		return CallOutput{}, err
	}
	return run(ctx, env, s, spec, args, approvalOf(env))
}

// FavAddInput saves a call under a name.
type FavAddInput struct {
	Name string `json:"name" jsonschema:"the favourite's name"`
	CallInput
}

// FavAddOutput is the saved favourite.
type FavAddOutput struct {
	Favourite Favourite `json:"favourite"`
}

// FavAdd saves a call for `lm servers fav run`. The tool and its
// arguments are checked against the server now, so a favourite that is
// saved is one that can run.
func FavAdd(ctx context.Context, env *op.Env, in FavAddInput) (FavAddOutput, error) {
	if err := shift(env, &in.TargetInput, &in.Tool, &in.JSON); err != nil {
		return FavAddOutput{}, err
	}
	if in.Name == "" || in.Tool == "" {
		return FavAddOutput{}, op.Errorf(op.KindInvalid, "a favourite needs a name, a server and a tool").
			WithHint("lm servers fav add NAME SERVER TOOL [JSON], or lm servers fav add NAME TOOL [JSON] --url URL")
	}
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return FavAddOutput{}, err
	}
	defer s.Close()
	tool, err := s.Tool(ctx, in.Tool)
	if err != nil {
		return FavAddOutput{}, err
	}
	args, err := in.arguments(tool)
	if err != nil {
		return FavAddOutput{}, err
	}
	if err := Validate(tool, args); err != nil {
		return FavAddOutput{}, err
	}
	f := Favourite{Name: in.Name, Target: s.target.withoutSecrets(), Tool: in.Tool, Arguments: plainArgs(args), Created: now(env)}
	return FavAddOutput{Favourite: f}, putFavourite(ctx, env, f)
}

func plainArgs(args map[string]any) map[string]any {
	m, _ := jsonValue(args).(map[string]any)
	return m
}

// FavListInput takes nothing.
type FavListInput struct{}

// FavListOutput lists the favourites by name.
type FavListOutput struct {
	Items []Favourite `json:"items"`
}

// FavList lists the favourites.
func FavList(ctx context.Context, env *op.Env, _ FavListInput) (FavListOutput, error) {
	items, err := favourites(ctx, env)
	return FavListOutput{Items: items}, err
}

// FavNameInput names a favourite.
type FavNameInput struct {
	Name   string `json:"name" jsonschema:"the favourite's name"`
	Bearer string `json:"bearer,omitempty" jsonschema:"a bearer token for a URL target (default $LM_SERVER_TOKEN)"`
}

// FavRun runs a favourite.
func FavRun(ctx context.Context, env *op.Env, in FavNameInput) (CallOutput, error) {
	f, err := favourite(ctx, env, in.Name)
	if err != nil {
		return CallOutput{}, err
	}
	return runSaved(ctx, env, f.Target, in.Bearer, f.Tool, f.Arguments)
}

// FavRmInput names the favourite to remove.
type FavRmInput struct {
	Name string `json:"name" jsonschema:"the favourite's name"`
}

// FavRmOutput is the removed favourite's name.
type FavRmOutput struct {
	Removed string `json:"removed"`
}

// FavRm removes a favourite.
func FavRm(ctx context.Context, env *op.Env, in FavRmInput) (FavRmOutput, error) {
	return FavRmOutput{Removed: in.Name}, removeFavourite(ctx, env, in.Name)
}
