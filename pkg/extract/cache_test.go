package extract

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestCacheEvictsTheOldestPastItsLimit(t *testing.T) {
	defer func(limit uint64) { cacheLimit = limit }(cacheLimit)
	cacheLimit = 3
	root := t.TempDir()
	var files []string
	for i := 1; i <= 5; i++ {
		name := fmt.Sprintf("f%d.md", i)
		os.WriteFile(filepath.Join(root, name), []byte(fmt.Sprintf("---\nn: %d\n---\n", i)), 0o644)
		files = append(files, name)
	}
	env := testEnv(t)
	call(t, env, Input{Root: root, Files: files[:3]})
	call(t, env, Input{Root: root, Files: files[3:]})
	d := call(t, env, Input{Root: root, Files: files})
	for i, f := range files {
		if want := i >= 2; d.Results[f].Cached != want {
			t.Errorf("%s cached = %v, want %v", f, d.Results[f].Cached, want)
		}
	}
	// the last call stored f1 and f2 again, evicting f3 and f4
	err := env.Store.View(context.Background(), func(tx *bolt.Tx) error {
		if n, m := tx.Bucket(bCache).Stats().KeyN, tx.Bucket(bCacheOrder).Stats().KeyN; n != 3 || m != 3 {
			t.Errorf("%d entries, %d in order; want 3", n, m)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	d = call(t, env, Input{Root: root, Files: files})
	if d.Stats.Cached != 3 || !d.Results["f1.md"].Cached || d.Results["f3.md"].Cached {
		t.Errorf("after eviction: %+v", d.Stats)
	}
}
