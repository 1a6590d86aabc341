// Package token keeps the gateway's bearer tokens in LM_HOME: the person's
// token, created on the gateway's first start and reused after, and named
// agent tokens, which the person makes for each agent. A request's token
// says who is calling: the person (the page), or an agent by its name.
package token

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/privatefile"
)

// Prefixes make a leaked token recognisable to secret scanners and to the
// person who finds it: lmp_ is the person's, lma_ an agent's.
const (
	personPrefix = "lmp_"
	agentPrefix  = "lma_"
)

// PersonPath is the file holding the person's token.
func PersonPath(home string) string { return filepath.Join(home, "gateway.token") }

// AgentsPath is the file listing the agent tokens (their digests only).
func AgentsPath(home string) string { return filepath.Join(home, "gateway-agents.json") }

// newToken is a random token: 32 bytes from the OS's generator.
func newToken(prefix string) string {
	var b [32]byte
	rand.Read(b[:]) // never fails (crypto/rand's contract since Go 1.24)
	return prefix + hex.EncodeToString(b[:])
}

// Person returns the person's token in home, creating it on first use. The
// file is readable by its owner only, and made whole under a temporary name
// and linked into place, so two gateways starting at once agree on one
// token and none ever reads half of it.
func Person(home string) (string, error) {
	path := PersonPath(home)
	if tok, err := readPerson(path); !errors.Is(err, fs.ErrNotExist) {
		return tok, err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", fmt.Errorf("create %s: %w", home, err)
	}
	tmp, err := os.CreateTemp(home, ".gateway.token.*")
	if err != nil {
		return "", fmt.Errorf("create the gateway's token: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(newToken(personPrefix) + "\n")
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("create the gateway's token: %w", err)
	}
	// Link fails when another process linked its token first: then that
	// one is the token.
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("create the gateway's token: %w", err)
	}
	return readPerson(path)
}

func readPerson(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	// A token others can read is no token: take their access away
	// before using it.
	if info.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(0o600); err != nil {
			return "", fmt.Errorf("%s is readable by other users and cannot be made private: %w", path, err)
		}
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return "", op.Errorf(op.KindInvalid, "the gateway's token file %s is empty", path).
			WithHint("remove it, and the gateway makes a new token on its next start")
	}
	return tok, nil
}

// Agent is an agent token as stored: its name and the SHA-256 of the
// token, never the token itself, so the file cannot be used to call.
type Agent struct {
	Name      string    `json:"name"`
	Digest    string    `json:"sha256"`
	CreatedAt time.Time `json:"created_at"`
}

type agentsFile struct {
	Agents []Agent `json:"agents"`
}

// namePattern is what an agent's name may be: it names the agent in the
// queue's status and on the page.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

func digest(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }

// AddAgent makes a token for the agent name and returns it; only its
// digest is kept, so this is the one time it is shown.
func AddAgent(home, name string, now time.Time) (string, error) {
	if !namePattern.MatchString(name) {
		return "", op.Errorf(op.KindInvalid, "%q is not a valid agent name", name).
			WithHint("1 to 64 letters, digits, '.', '-' or '_', starting with a letter or digit")
	}
	tok := newToken(agentPrefix)
	d := digest(tok)
	err := editAgents(home, func(f *agentsFile) error {
		if slices.ContainsFunc(f.Agents, func(a Agent) bool { return a.Name == name }) {
			return op.Errorf(op.KindConflict, "agent %q already has a token", name).
				WithHint("remove it first with 'lm gateway token rm %s', or choose another name", name)
		}
		f.Agents = append(f.Agents, Agent{Name: name, Digest: hex.EncodeToString(d[:]), CreatedAt: now.UTC()})
		return nil
	})
	if err != nil {
		return "", err
	}
	return tok, nil
}

// RemoveAgent revokes the agent's token; a running gateway refuses it from
// its next request.
func RemoveAgent(home, name string) error {
	return editAgents(home, func(f *agentsFile) error {
		i := slices.IndexFunc(f.Agents, func(a Agent) bool { return a.Name == name })
		if i < 0 {
			return op.Errorf(op.KindNotFound, "no agent token named %q", name).WithHint("see 'lm gateway token list'")
		}
		f.Agents = slices.Delete(f.Agents, i, i+1)
		return nil
	})
}

// Agents lists the agent tokens, oldest first.
func Agents(home string) ([]Agent, error) {
	f, err := readAgents(AgentsPath(home))
	return f.Agents, err
}

func editAgents(home string, change func(*agentsFile) error) error {
	path := AgentsPath(home)
	return privatefile.WithLock(path, func() error {
		f, err := readAgents(path)
		if err != nil {
			return err
		}
		if err := change(&f); err != nil {
			return err
		}
		data, err := json.MarshalIndent(f, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", path, err)
		}
		return privatefile.Write(path, append(data, '\n'))
	})
}

func readAgents(path string) (agentsFile, error) {
	var f agentsFile
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return f, op.Errorf(op.KindInvalid, "%s is not valid: %v", path, err).
			WithHint("remove it and make the agent tokens again with 'lm gateway token add NAME'")
	}
	return f, nil
}

// Verifier tells who presented a token. It rereads the agent tokens when
// their file changes, so a token added or removed while the gateway runs
// counts from the next request.
type Verifier struct {
	home   string
	person [32]byte

	mu     sync.Mutex
	loaded bool
	stamp  fileStamp
	agents []verifiedAgent
	err    error
}

type verifiedAgent struct {
	name   string
	digest [32]byte
}

type fileStamp struct {
	exists  bool
	modTime time.Time
	size    int64
	ino     uint64
}

// NewVerifier checks tokens against person's token (none when empty) and
// the agent tokens in home.
func NewVerifier(home, person string) *Verifier {
	v := &Verifier{home: home}
	if person != "" {
		v.person = digest(person)
	}
	return v
}

// Identify returns the caller a token proves, or false when it proves
// nothing. Digests are compared in constant time, so neither a token's
// bytes nor its length leak through timing.
func (v *Verifier) Identify(tok string) (op.Caller, bool, error) {
	if tok == "" {
		return op.Caller{}, false, nil
	}
	got := digest(tok)
	var zero [32]byte
	if v.person != zero && subtle.ConstantTimeCompare(got[:], v.person[:]) == 1 {
		return op.Caller{Role: op.RolePerson}, true, nil
	}
	agents, err := v.current()
	if err != nil {
		return op.Caller{}, false, err
	}
	for _, a := range agents {
		if subtle.ConstantTimeCompare(got[:], a.digest[:]) == 1 {
			return op.Caller{Role: op.RoleAgent, Name: a.name}, true, nil
		}
	}
	return op.Caller{}, false, nil
}

// current returns the agent tokens, reread when the file has changed.
func (v *Verifier) current() ([]verifiedAgent, error) {
	path := AgentsPath(v.home)
	stamp := stampOf(path)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.loaded && stamp == v.stamp {
		return v.agents, v.err
	}
	v.loaded, v.stamp = true, stamp
	f, err := readAgents(path)
	v.agents, v.err = make([]verifiedAgent, 0, len(f.Agents)), err
	for _, a := range f.Agents {
		var d [32]byte
		if b, err := hex.DecodeString(a.Digest); err == nil && len(b) == len(d) {
			copy(d[:], b)
			v.agents = append(v.agents, verifiedAgent{name: a.Name, digest: d})
		}
	}
	return v.agents, v.err
}

// stampOf identifies a version of a file: privatefile.Write replaces the
// file, so a new inode says it changed even within one mtime tick.
func stampOf(path string) fileStamp {
	info, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	s := fileStamp{exists: true, modTime: info.ModTime(), size: info.Size()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.ino = st.Ino
	}
	return s
}
