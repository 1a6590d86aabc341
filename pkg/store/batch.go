package store

import (
	"context"
	"errors"
	"slices"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Batch runs fn in a read-write transaction that it may share with other
// Batch calls of this process on the same store: while one commit is being
// written, the writes that arrive queue up, and the next commit holds them
// all. A durable commit (two fdatasyncs) costs the same for one write as for
// thirty, so concurrent writers — HTTP adds, claims from many sessions — go
// as fast as the disk syncs, not one sync per write. Batch returns only after
// the commit holding fn's writes is on disk, or with fn's error and nothing
// of fn written.
//
// fn may run more than once, and must do the same each time (set its
// results rather than append to them): when a write in a shared
// transaction fails, the transaction is rolled back, the failed write gets
// its error, and the others run again without it. A write is never
// delayed to wait for company; it waits only for the commit in progress.
func (s *Store) Batch(ctx context.Context, fn func(*bolt.Tx) error) error {
	if s.err != nil {
		return s.err
	}
	g := s.group()
	w := &queuedWrite{ctx: ctx, fn: fn, done: make(chan struct{}), lead: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	leader := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !leader {
		select {
		case <-w.done:
			return w.err
		case <-w.lead:
		}
	}
	g.mu.Lock()
	batch := g.queue
	g.queue = nil
	g.mu.Unlock()
	s.commitBatch(batch)
	// Hand the lead to the first write that queued meanwhile, whose
	// caller is waiting anyway; this one returns at once.
	g.mu.Lock()
	if len(g.queue) > 0 {
		close(g.queue[0].lead)
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	return w.err
}

// writeGroup is the queue of Batch writes to one store in this process.
type writeGroup struct {
	mu       sync.Mutex
	queue    []*queuedWrite
	leading  bool // a caller is committing, and will hand the lead on
	trailers []*trailer
	// seen is the mark of the latest commit, of any process, when the
	// trailers last all ran: the state they looked at.
	seen mark
}

// A trailer runs last in every transaction Batch commits (see
// AfterWrites).
type trailer struct {
	run  func(*bolt.Tx) error
	done func(error)
}

// ErrRolledBack is what a function given to AfterWrites hears when what it
// wrote in a transaction was not committed although the transaction did not
// fail because of it: every write of the batch failed, or the transaction
// ended before reaching it. Nothing it wrote is stored; it may look again.
var ErrRolledBack = errors.New("rolled back with the writes it followed")

// AfterWrites has run called last in every transaction that Batch commits
// on this store in this process, after the batch's writes, so it sees what
// they wrote: the queue's claimer hands an instruction out in the commit
// that adds it, rather than in a commit of its own after it. done then
// hears how the transaction ended, once for each batch in which run ran:
// nil once it committed (or wrote nothing), or why what run wrote is not
// stored — the commit's error, run's own error (the transaction is rolled
// back, and the batch's writes run again without run), or ErrRolledBack.
// run, like a write, may run more than once for one batch and must set its
// results afresh each time. The registration lasts for the process.
func (s *Store) AfterWrites(run func(*bolt.Tx) error, done func(error)) {
	g := s.group()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.trailers = append(g.trailers, &trailer{run: run, done: done})
}

// SeenByTrailers says whether every function AfterWrites registered ran
// in a transaction after the store's latest commit, by any process, or in
// the one that made it: a change signalled since is one they have seen. It
// reads the lock file, not the store, and answers false when it cannot
// tell.
func (s *Store) SeenByTrailers() bool {
	g := s.group()
	latest := s.latestMark()
	g.mu.Lock()
	defer g.mu.Unlock()
	return latest != mark{} && latest == g.seen
}

func (g *writeGroup) trailersNow() []*trailer {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.trailers)
}

type queuedWrite struct {
	ctx  context.Context
	fn   func(*bolt.Tx) error
	err  error
	done chan struct{} // closed once err is final
	lead chan struct{} // closed when this write's caller is to commit the queue
}

func (w *queuedWrite) finish(err error) {
	w.err = err
	close(w.done)
}

var writeGroups sync.Map // path -> *writeGroup

func (s *Store) group() *writeGroup {
	g, _ := writeGroups.LoadOrStore(s.Path, new(writeGroup))
	return g.(*writeGroup)
}

// commitBatch commits the writes in one transaction, in order, and then
// the trailers (see AfterWrites). A write that fails (its error, its
// context ended, or a panic while it ran) gets its error and the rest run
// again without it, so each write's outcome is what it would have been had
// the writes run one after another; a trailer that fails is left out the
// same way. An error outside any write (the lock, the file, the commit
// itself) is every write's.
func (s *Store) commitBatch(batch []*queuedWrite) {
	g := s.group()
	trailers := g.trailersNow()
	registered := len(trailers)
	// What each trailer that ran hears once the batch is settled: the
	// last transaction's outcome if it ran in it, else why not. It hears
	// it before the writes' callers return, which may act on what a
	// trailer did (a call waiting on the queue's claimer).
	heard := map[*trailer]error{}
	tell := func() {
		for t, err := range heard {
			t.done(err)
		}
	}
	for {
		// Writes whose callers gave up are answered together before the
		// transaction: found one by one inside it, each would roll back
		// and rerun every write before it: a cost that grows with the
		// square of the batch, under the lock, when hundreds of waiting
		// calls are cancelled at once.
		batch = slices.DeleteFunc(batch, func(w *queuedWrite) bool {
			if err := w.ctx.Err(); err != nil {
				w.finish(err)
				return true
			}
			return false
		})
		if len(batch) == 0 {
			tell()
			return
		}
		// Alone, a write's own context bounds its wait for the lock, as
		// in Update; shared, each write's context is checked before it
		// runs.
		ctx := context.Background()
		if len(batch) == 1 {
			ctx = batch[0].ctx
		}
		at, failed, trailing := -1, false, -1
		err := s.runThen(ctx, true, func(tx *bolt.Tx) error {
			for i, w := range batch {
				at = i
				if err := w.ctx.Err(); err != nil {
					failed = true
					return err
				}
				if err := w.fn(tx); err != nil {
					failed = true
					return err
				}
			}
			at = len(batch)
			for i, t := range trailers {
				trailing = i
				// Until this transaction commits, nothing run writes
				// is stored.
				heard[t] = ErrRolledBack
				if err := t.run(tx); err != nil {
					return err
				}
			}
			trailing = -1
			return nil
		}, func(latest mark) {
			// Every trailer ran, unless one failed or came since.
			g.mu.Lock()
			if len(trailers) == registered && len(g.trailers) == registered {
				g.seen = latest
			}
			g.mu.Unlock()
		})
		// Without a returned error, the write or trailer that was running
		// when the transaction failed panicked.
		if err != nil && trailing >= 0 {
			heard[trailers[trailing]] = err
			trailers = slices.Delete(trailers, trailing, trailing+1)
			continue
		}
		if err != nil && (failed || at >= 0 && at < len(batch)) {
			batch[at].finish(err)
			batch = append(batch[:at:at], batch[at+1:]...)
			continue
		}
		if at == len(batch) {
			for _, t := range trailers {
				heard[t] = err
			}
		}
		tell()
		for _, w := range batch {
			w.finish(err)
		}
		return
	}
}
