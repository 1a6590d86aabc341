package hub

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"lmtool.dev/lm/pkg/servers"
)

// settleDelay lets a save finish before the file is read: editors write in
// several steps (truncate and write, or write a copy and rename it over).
const settleDelay = 100 * time.Millisecond

// watchConfig reloads servers.json whenever it changes on disk, so a hand
// edit takes effect like 'lm servers add' does. It watches the directory,
// not the file: editors replace the file by rename, which ends a watch on
// the file itself.
func (h *Hub) watchConfig() error {
	if err := os.MkdirAll(h.home, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", h.home, err)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(h.home); err != nil {
		w.Close()
		return fmt.Errorf("watch %s: %w", h.home, err)
	}
	path := filepath.Clean(servers.Path(h.home))
	go func() {
		defer w.Close()
		var settle <-chan time.Time
		for {
			select {
			case <-h.ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Clean(ev.Name) == path && !ev.Has(fsnotify.Chmod) {
					settle = time.After(settleDelay)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				h.log.Warn("watching the servers file", "err", err)
			case <-settle:
				settle = nil
				if err := h.Reload(); err != nil {
					h.log.Error("servers file not applied; keeping the configuration last loaded", "err", err)
				} else {
					h.log.Info("servers file reloaded", "path", path)
				}
			}
		}
	}()
	return nil
}
