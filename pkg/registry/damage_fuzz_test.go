package registry

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"lmtool.dev/lm/pkg/op"
	"lmtool.dev/lm/pkg/store"
)

// storeReads are the operations that read the store, with an input each;
// queue_add and store_salvage join them because a damaged store must refuse
// writes and be salvaged without a crash either.
var storeReads = []struct {
	name  string
	input string
}{
	{"queue_list", `{"status":"all"}`},
	{"queue_status", `{}`},
	{"queue_show", `{"id":"0"}`},
	{"jobs_list", `{}`},
	{"jobs_status", `{"id":"j_01"}`},
	{"servers_history", `{}`},
	{"servers_fav_list", `{}`},
	{"store_info", `{}`},
	{"store_check", `{}`},
	{"local_extract", `{"files":["docs"],"root":"ROOT"}`},
	{"queue_add", `{"content":"written into a damaged store?"}`},
	{"store_backup", `{"file":"OUT/backup.db"}`},
	{"store_salvage", `{"file":"OUT/salvage.db"}`},
}

// A corruption program is read three bytes at a time: what to do, where
// (a fraction of the file), and a byte.
const (
	flipByte = iota
	truncateFile
	swapPages
	zeroPage
	corruptions
)

// maxHeap bounds what reading one damaged store may take: a check of a
// store this size that needed more has followed a bogus count.
const maxHeap = 512 << 20

// FuzzDamagedStore corrupts a real store (byte flips, truncation, swapped
// and zeroed pages) and runs every operation that reads the store against
// it: each must answer — a result or an error — without a panic, a hang or
// unbounded memory.
func FuzzDamagedStore(f *testing.F) {
	base := damageBase(f)
	f.Add([]byte{flipByte, 0x80, 0x01})
	f.Add([]byte{truncateFile, 0x30, 0})
	f.Add([]byte{truncateFile, 0x00, 0})
	f.Add([]byte{swapPages, 0x40, 0x07})
	f.Add([]byte{zeroPage, 0xF0, 0})
	f.Add([]byte{flipByte, 0x00, 0xFF, flipByte, 0x01, 0x10})
	f.Add([]byte{flipByte, 0xC8, 0x7F, swapPages, 0x10, 0x03, flipByte, 0xFF, 0x00})
	ops := map[string]op.Operation{}
	for _, o := range All() {
		ops[o.Info().Name] = o
	}
	f.Fuzz(func(t *testing.T, program []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "lm.db")
		if err := os.WriteFile(path, corrupt(base.file, base.pageSize, program), 0o600); err != nil {
			t.Fatal(err)
		}
		env := &op.Env{Store: store.New(path, time.Second), Home: dir, Stderr: io.Discard, Now: time.Now, Caller: op.Person()}
		for _, read := range storeReads {
			input := strings.NewReplacer("ROOT", base.root, "OUT", dir).Replace(read.input)
			os.Remove(filepath.Join(dir, "backup.db"))
			os.Remove(filepath.Join(dir, "salvage.db"))
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				ops[read.name].Call(ctx, env, json.RawMessage(input))
			}()
			select {
			case <-answered:
			case <-time.After(time.Minute):
				t.Fatalf("%s did not answer on a damaged store (program %x)", read.name, program)
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > maxHeap {
				t.Fatalf("%s left %d MB in use on a damaged store (program %x)", read.name, m.HeapInuse>>20, program)
			}
		}
	})
}

// corrupt applies a corruption program to a copy of a store file.
func corrupt(file []byte, pageSize int, program []byte) []byte {
	data := append([]byte(nil), file...)
	at := func(b byte, n int) int { return int(b) * n / 256 }
	for i := 0; i+2 < len(program) && len(data) > 0; i += 3 {
		what, where, value := program[i]%corruptions, program[i+1], program[i+2]
		pages := len(data) / pageSize
		switch what {
		case flipByte:
			data[at(where, len(data))] ^= value | 1
		case truncateFile:
			data = data[:at(where, len(data))]
		case swapPages:
			a, b := at(where, pages), at(value, pages)
			if a != b && pages > 0 {
				pa := append([]byte(nil), data[a*pageSize:(a+1)*pageSize]...)
				copy(data[a*pageSize:], data[b*pageSize:(b+1)*pageSize])
				copy(data[b*pageSize:], pa)
			}
		case zeroPage:
			if p := at(where, pages); pages > 0 {
				clear(data[p*pageSize : (p+1)*pageSize])
			}
		}
	}
	return data
}

type baseStore struct {
	file     []byte
	pageSize int
	root     string // a project for local_extract, whose results fill the cache
}

var (
	baseOnce sync.Once
	base     baseStore
	baseErr  error
)

// damageBase builds, once, a store with something in every bucket a reader
// decodes: instructions pending and consumed, agents, events, settings, the
// extract cache, jobs, the client's history and favourites.
func damageBase(tb testing.TB) baseStore {
	baseOnce.Do(func() {
		root, err := os.MkdirTemp("", "lm-damage-project")
		if err != nil {
			baseErr = err
			return
		}
		tb.Cleanup(func() { os.RemoveAll(root) })
		base, baseErr = buildBase(root)
	})
	if baseErr != nil {
		tb.Fatal(baseErr)
	}
	return base
}

func buildBase(root string) (baseStore, error) {
	dir, err := os.MkdirTemp("", "lm-damage-base")
	if err != nil {
		return baseStore{}, err
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o700); err != nil {
		return baseStore{}, err
	}
	for i := range 20 {
		doc := fmt.Sprintf("---\ntitle: page %d\ntags: [a, b]\n---\n# Page %d\n", i, i)
		if err := os.WriteFile(filepath.Join(root, "docs", fmt.Sprintf("p%02d.md", i)), []byte(doc), 0o600); err != nil {
			return baseStore{}, err
		}
	}
	path := filepath.Join(dir, "lm.db")
	env := &op.Env{Store: store.New(path, time.Second), Home: dir, Stderr: io.Discard, Now: time.Now, Caller: op.Person()}
	ops := map[string]op.Operation{}
	for _, o := range All() {
		ops[o.Info().Name] = o
	}
	var contents []string
	for i := range 300 {
		contents = append(contents, fmt.Sprintf("instruction %d: %s", i, strings.Repeat("padding ", i%20)))
	}
	batch, _ := json.Marshal(map[string]any{"contents": contents})
	ctx := context.Background()
	for _, call := range []struct{ name, input string }{
		{"queue_add", string(batch)},
		{"get_user_request", `{"agent_id":"fuzz-agent"}`},
		{"get_user_request", `{"agent_id":"other-agent"}`},
		{"local_extract", fmt.Sprintf(`{"files":["docs"],"root":%q}`, root)},
	} {
		if _, err := ops[call.name].Call(ctx, env, json.RawMessage(call.input)); err != nil {
			return baseStore{}, fmt.Errorf("%s: %w", call.name, err)
		}
	}
	// Jobs and the client's history are written by processes a test does
	// not start (a supervisor, a server call): write their records as they
	// store them.
	err = env.Store.Update(ctx, func(tx *bolt.Tx) error {
		for bucket, records := range map[string]map[string]string{
			"jobs.Jobs": {
				"j_01JOBEXITED": `{"job_id":"j_01JOBEXITED","state":"exited","argv":["true"],"cwd":"/","pty":false,"created_at":"2026-01-01T00:00:00Z","exit_code":0,"bytes_emitted":0,"truncated":false,"log_size":1024,"orphan_ttl_sec":0,"max_running":0}`,
			},
			"agent.history": {
				"h_01CALL": `{"id":"h_01CALL","time":"2026-01-01T00:00:00Z","target":{"server":"everything"},"tool":"echo","arguments":{"message":"hi"},"approval":"approved","duration_ms":3,"outcome":"ok"}`,
			},
			"agent.favourites": {
				"echo": `{"name":"echo","target":{"server":"everything"},"tool":"echo","arguments":{"message":"hi"},"created":"2026-01-01T00:00:00Z"}`,
			},
		} {
			b, err := tx.CreateBucketIfNotExists([]byte(bucket))
			if err != nil {
				return err
			}
			for k, v := range records {
				if err := b.Put([]byte(k), []byte(v)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return baseStore{}, err
	}
	if problems, err := env.Store.Check(ctx); err != nil || len(problems) > 0 {
		return baseStore{}, fmt.Errorf("the base store is not sound: %v %v", problems, err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		return baseStore{}, err
	}
	// Only the pages in use: the sparse tail bbolt reserves is zeros.
	pageSize := int(binary.LittleEndian.Uint32(file[16+8:]))
	used := int(binary.LittleEndian.Uint64(file[16+40:])) * pageSize
	if other := int(binary.LittleEndian.Uint64(file[pageSize+16+40:])) * pageSize; other > used {
		used = other
	}
	return baseStore{file: file[:min(used, len(file))], pageSize: pageSize, root: root}, nil
}
