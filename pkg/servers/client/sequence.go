package client

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/itchyny/gojq"

	"lmtool.dev/lm/pkg/jsonio"
	"lmtool.dev/lm/pkg/op"
)

// Sequence is a chain of calls to one server. A step's Jq arguments are jq
// expressions over the results of the steps before it, by step name:
//
//	{"steps": [
//	  {"name": "sum", "tool": "get-sum", "arguments": {"a": 1, "b": 2}},
//	  {"tool": "echo", "jq": {"message": "\"sum: \" + .sum[0].text"}}
//	]}
type Sequence struct {
	Steps []Step `json:"steps"`
}

// Step is one call of a sequence.
type Step struct {
	Name      string            `json:"name,omitempty"`
	Tool      string            `json:"tool"`
	Arguments map[string]any    `json:"arguments,omitempty"`
	Jq        map[string]string `json:"jq,omitempty"`

	compiled map[string]*gojq.Code
}

// ParseSequence reads a sequence file and checks it whole before anything
// runs: every step has a tool, names are unique, every jq expression
// compiles and names only earlier steps' results through its input.
func ParseSequence(data []byte) (*Sequence, error) {
	var seq Sequence
	if err := jsonio.DecodeStrictNumbers(data, &seq); err != nil {
		return nil, op.Errorf(op.KindInvalid, "the sequence is not valid: %v", err).
			WithHint(`expected {"steps": [{"name": …, "tool": …, "arguments": {…}, "jq": {"arg": "EXPR"}}, …]}`)
	}
	if len(seq.Steps) == 0 {
		return nil, op.Errorf(op.KindInvalid, "the sequence has no steps")
	}
	names := map[string]bool{}
	for i := range seq.Steps {
		st := &seq.Steps[i]
		if st.Name == "" {
			st.Name = fmt.Sprintf("step%d", i+1)
		}
		if st.Tool == "" {
			return nil, op.Errorf(op.KindInvalid, "step %d (%s) has no tool", i+1, st.Name)
		}
		if names[st.Name] {
			return nil, op.Errorf(op.KindInvalid, "step %d: the name %q is used twice", i+1, st.Name)
		}
		names[st.Name] = true
		st.compiled = map[string]*gojq.Code{}
		for arg, expr := range st.Jq {
			q, err := gojq.Parse(expr)
			if err != nil {
				return nil, op.Errorf(op.KindInvalid, "step %d (%s): jq for %q: %v", i+1, st.Name, arg, err)
			}
			code, err := gojq.Compile(q)
			if err != nil {
				return nil, op.Errorf(op.KindInvalid, "step %d (%s): jq for %q: %v", i+1, st.Name, arg, err)
			}
			st.compiled[arg] = code
		}
	}
	return &seq, nil
}

// arguments builds a step's arguments: the literal ones, then each jq
// expression's single value over the earlier results.
func (st *Step) arguments(ctx context.Context, results map[string]any) (map[string]any, error) {
	args := plainArgs(st.Arguments)
	if args == nil {
		args = map[string]any{}
	}
	keys := make([]string, 0, len(st.compiled))
	for k := range st.compiled {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, arg := range keys {
		iter := st.compiled[arg].RunWithContext(ctx, results)
		v, ok := iter.Next()
		if !ok {
			return nil, fmt.Errorf("jq for %q gave no value", arg)
		}
		if err, isErr := v.(error); isErr {
			return nil, fmt.Errorf("jq for %q: %v", arg, err)
		}
		if _, more := iter.Next(); more {
			return nil, fmt.Errorf("jq for %q gave more than one value", arg)
		}
		args[arg] = v
	}
	return args, nil
}

// SequenceInput runs a sequence file against a server.
type SequenceInput struct {
	File string `json:"file" jsonschema:"the sequence: a JSON file (- for stdin)"`
	TargetInput
}

// StepResult is what one step did.
type StepResult struct {
	Step       int            `json:"step"`
	Name       string         `json:"name"`
	Tool       string         `json:"tool"`
	Arguments  map[string]any `json:"arguments,omitempty"`
	OK         bool           `json:"ok"`
	Result     any            `json:"result,omitempty"`
	Error      string         `json:"error,omitempty"`
	HistoryID  string         `json:"history_id,omitempty"`
	DurationMS int64          `json:"duration_ms"`
}

// SequenceOutput lists the steps that ran; FailedStep is the first that
// failed (the last one listed), 0 when all succeeded.
type SequenceOutput struct {
	OK         bool         `json:"ok"`
	FailedStep int          `json:"failed_step,omitempty"`
	Steps      []StepResult `json:"steps"`
	exit       int
}

// ExitCode is the failed step's error's exit code.
func (o SequenceOutput) ExitCode() int { return o.exit }

// RunSequence runs the steps in order over one session, with a heartbeat
// watching it, and stops at the first failure.
func RunSequence(ctx context.Context, env *op.Env, in SequenceInput) (SequenceOutput, error) {
	if err := shift(env, &in.TargetInput, &in.File); err != nil {
		return SequenceOutput{}, err
	}
	if in.File == "-" && !env.Caller.Terminal {
		return SequenceOutput{}, op.Errorf(op.KindInvalid, "a sequence is read from stdin only on the command line; give a file")
	}
	data, err := readFile(env, in.File)
	if err != nil {
		return SequenceOutput{}, err
	}
	seq, err := ParseSequence(data)
	if err != nil {
		return SequenceOutput{}, err
	}
	s, err := open(ctx, env, in.TargetInput)
	if err != nil {
		return SequenceOutput{}, err
	}
	defer s.Close()
	hbCtx, stopHeartbeat := context.WithCancel(ctx)
	defer stopHeartbeat()
	go s.Heartbeat(hbCtx)

	out := SequenceOutput{OK: true, Steps: []StepResult{}}
	results := map[string]any{}
	for i := range seq.Steps {
		st := &seq.Steps[i]
		res := StepResult{Step: i + 1, Name: st.Name, Tool: st.Tool}
		err := func() error {
			args, err := st.arguments(ctx, results)
			if err != nil {
				return op.Errorf(op.KindInvalid, "%w", err)
			}
			res.Arguments = args
			tool, err := s.Tool(ctx, st.Tool)
			if err != nil {
				return err
			}
			call, err := run(ctx, env, s, tool, args, approvalOf(env))
			if err != nil {
				return err
			}
			res.Result, res.HistoryID, res.DurationMS = call.Result, call.HistoryID, call.DurationMS
			results[st.Name] = call.Result
			return nil
		}()
		res.OK = err == nil
		if err != nil {
			res.Error = err.Error()
			out.OK, out.FailedStep, out.exit = false, i+1, op.KindOf(err).ExitCode()
			fmt.Fprintf(env.Stderr, "lm: servers sequence: step %d (%s) failed: %v\n", i+1, st.Name, err)
		}
		out.Steps = append(out.Steps, res)
		if err != nil {
			break
		}
	}
	return out, nil
}

func readFile(env *op.Env, name string) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if name == "-" {
		data, err = io.ReadAll(env.Stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, op.Errorf(op.KindNotFound, "read the sequence: %w", err)
	}
	return data, nil
}
