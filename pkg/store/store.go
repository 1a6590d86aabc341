// Package store is lm's shared bbolt database. Many lm processes use one
// file at once (agents each spawning `lm mcp`, a gateway, scripts), and bbolt
// holds a file lock for as long as a handle is open, so every transaction
// opens the file, runs, and closes it again; nothing keeps it open while it
// waits. Writers wake waiters in other processes through a sidecar file
// watched with inotify (see [Store.Watch]).
package store

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the layout version this binary writes. A store with an
// older version is migrated on first write; a newer one is refused.
const SchemaVersion = 1

// DefaultLockTimeout is how long an operation waits for another process to
// release the store before failing.
const DefaultLockTimeout = 5 * time.Second

var (
	metaBucket = Declare("meta", AnyKey, decodeMeta, func(v []byte) ([]byte, error) { return v, nil }).Name()
	versionKey = []byte("schema_version")
)

// decodeMeta accepts the store's own records: the schema version is a
// decimal number.
func decodeMeta(k, v []byte) ([]byte, error) {
	if string(k) == string(versionKey) {
		if _, err := strconv.Atoi(string(v)); err != nil {
			return nil, fmt.Errorf("schema version %q is not a number", v)
		}
	}
	return v, nil
}

// ErrLocked is returned (wrapped in a [LockedError]) when the store stayed
// locked by another process past the lock timeout.
var ErrLocked = errors.New("store is locked")

// LockedError names the store that could not be locked in time.
type LockedError struct {
	Path   string
	Waited time.Duration
	// Foreign is set when the holder is not lm: every lm process takes the
	// sidecar lock first, so only another program holds the file's own.
	Foreign bool
}

func (e *LockedError) Error() string {
	if e.Foreign {
		return fmt.Sprintf("store %s is locked by a program other than lm (waited %s)", e.Path, e.Waited)
	}
	return fmt.Sprintf("store %s is locked by another process (waited %s)", e.Path, e.Waited)
}
func (e *LockedError) Unwrap() error { return ErrLocked }

// VersionError reports a store written by a newer lm.
type VersionError struct {
	Path          string
	Found, Wanted int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("store %s has schema version %d, newer than this lm understands (%d); upgrade lm", e.Path, e.Found, e.Wanted)
}

// Store is a handle on the database file; it holds nothing open.
type Store struct {
	Path        string
	LockTimeout time.Duration
	// err, when set, is why there is no store to use (see Unusable).
	err error
}

// Unusable returns a handle whose every use fails with err: a process that
// cannot locate its store (no HOME, no LM_HOME) may still run commands that
// never touch it, such as lm version.
func Unusable(err error) *Store { return &Store{err: err} }

// Err is why the store cannot be used, if it cannot.
func (s *Store) Err() error { return s.err }

// New returns a handle for the store at path.
func New(path string, lockTimeout time.Duration) *Store {
	if lockTimeout <= 0 {
		lockTimeout = DefaultLockTimeout
	}
	return &Store{Path: path, LockTimeout: lockTimeout}
}

// LockPath is the sidecar file used for locking and change notification.
func (s *Store) LockPath() string { return s.Path + ".lock" }

// inProcess serialises opens of one path within this process: a second flock
// from the same process would wait on the first.
var inProcess sync.Map // path -> *sync.Mutex

func (s *Store) processMutex() *sync.Mutex {
	m, _ := inProcess.LoadOrStore(s.Path, new(sync.Mutex))
	return m.(*sync.Mutex)
}

// Update runs fn in a read-write transaction. If fn returns an error nothing
// is written. After a successful commit, watchers in every process are woken.
func (s *Store) Update(ctx context.Context, fn func(*bolt.Tx) error) error {
	return s.run(ctx, true, fn)
}

// View runs fn in a read-only transaction. A store that does not exist yet
// is created first, so readers see an empty, current store.
func (s *Store) View(ctx context.Context, fn func(*bolt.Tx) error) error {
	if s.err != nil {
		return s.err
	}
	if _, err := os.Stat(s.Path); errors.Is(err, os.ErrNotExist) {
		if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
			return err
		}
	}
	err := s.run(ctx, false, fn)
	if errors.Is(err, errNeedsMigration) {
		// A read-only transaction cannot migrate; a write migrates once.
		if err := s.Update(ctx, func(*bolt.Tx) error { return nil }); err != nil {
			return err
		}
		err = s.run(ctx, false, fn)
	}
	return err
}

var errNeedsMigration = errors.New("store needs migration")

func (s *Store) run(ctx context.Context, write bool, fn func(*bolt.Tx) error) (err error) {
	return s.runThen(ctx, write, fn, nil)
}

// runThen is run, with then (when not nil) called after a transaction that
// succeeded, still under the lock it held, with the mark of the store's
// latest commit: the one this transaction made, before it is written.
func (s *Store) runThen(ctx context.Context, write bool, fn func(*bolt.Tx) error, then func(mark)) (err error) {
	if s.err != nil {
		return s.err
	}
	defer s.contain(&err, write)
	defer faultsPanic()()
	if err := s.checkKind(); err != nil {
		return err
	}
	return s.locked(ctx, write, func(lock *fileLock) error {
		// A commit's notify hands then the mark it writes before writing
		// it: a watcher woken by the write finds then's work done.
		lock.beforeMark = then
		if err := s.transact(ctx, write, lock, fn); err != nil {
			return err
		}
		if lock.beforeMark != nil {
			// Nothing changed, no mark written: the latest stands.
			lock.beforeMark(lock.latest())
		}
		return nil
	})
}

// viewHeld is a read transaction under a lock that fn's caller holds, a
// panic or memory fault contained as in every transaction.
func (s *Store) viewHeld(ctx context.Context, lock *fileLock, fn func(*bolt.Tx) error) (err error) {
	defer s.contain(&err, false)
	defer faultsPanic()()
	return s.transact(ctx, false, lock, fn)
}

// locked runs fn holding the store's lock: shared for readers, exclusive
// for writers (whose store directory it creates first).
func (s *Store) locked(ctx context.Context, exclusive bool, fn func(*fileLock) error) error {
	mu := s.processMutex()
	mu.Lock()
	defer mu.Unlock()
	if exclusive {
		if err := os.MkdirAll(filepath.Dir(s.Path), 0o700); err != nil {
			return fmt.Errorf("create store directory: %w", err)
		}
	}
	lock, err := acquire(ctx, s.LockPath(), exclusive, s.LockTimeout)
	if errors.Is(err, ErrLocked) {
		return &LockedError{Path: s.Path, Waited: s.LockTimeout}
	}
	if err != nil {
		return err
	}
	defer lock.release()
	return fn(lock)
}

// transact opens the database under lock and runs fn in one transaction.
func (s *Store) transact(ctx context.Context, write bool, lock *fileLock, fn func(*bolt.Tx) error) error {
	size, err := s.checkFile(write)
	if err != nil {
		return err
	}

	// Every lm process takes the sidecar lock first, so bbolt's own flock
	// only waits on foreign tools holding the file.
	//
	// Address space reserved past the file's end spares a growing
	// transaction the remaps (each copying every node it touched) bbolt
	// does as the file doubles: a 100,000-instruction batch adds half as
	// fast without it. It costs no memory, and per-call commits measured
	// the same. Readers reserve it too: in a truncated file, a page past
	// the end then faults (and is reported) instead of reading whatever
	// memory lies beyond a mapping of the file's size.
	//
	// The free list stays synced and an array (bbolt's defaults): see
	// compactFreePages for the figures. Buckets keep bbolt's FillPercent
	// (0.5) although the queue's grow at their end: packing split pages
	// full (1.0) halves an append-only bucket's leaf pages (4039 → 2025
	// for 20,000 events) but writes the same 37.4 KB per appending commit,
	// and a store that shrinks by itself after a prune has little to gain
	// from being smaller.
	opts := &bolt.Options{Timeout: s.LockTimeout, ReadOnly: !write, InitialMmapSize: 256 << 20}
	db, err := bolt.Open(s.Path, 0o600, opts)
	if errors.Is(err, berrors.ErrTimeout) {
		return &LockedError{Path: s.Path, Waited: s.LockTimeout, Foreign: true}
	}
	if isDamage(err) {
		s.markDamaged(err.Error())
		return s.damaged(write, err.Error())
	}
	if err != nil {
		return fmt.Errorf("open store %s: %w", s.Path, err)
	}
	defer db.Close()
	if write {
		db.AllocSize = growStep
	}

	if !write {
		return db.View(func(tx *bolt.Tx) error {
			if err := s.checkSize(tx, size, write); err != nil {
				return err
			}
			if err := s.checkVersion(tx); err != nil {
				return err
			}
			if Version(tx) < SchemaVersion {
				return errNeedsMigration
			}
			return fn(tx)
		})
	}
	changed, err := commit(db, func(tx *bolt.Tx) error {
		if err := s.checkSize(tx, size, write); err != nil {
			return err
		}
		if err := s.migrate(tx); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return fn(tx)
	})
	if err != nil {
		return err
	}
	reclaim := changed && worthCompacting(db)
	if err := db.Close(); err != nil {
		return fmt.Errorf("close store %s: %w", s.Path, err)
	}
	if reclaim {
		s.compactAfterCommit()
	}
	if changed {
		lock.notify()
	}
	return nil
}

// A store compacts itself after a commit that leaves at least
// compactFreePages free, more than the pages in use, if those are at most
// compactLivePages.
//
// bbolt never gives pages back to the file system, and every commit writes
// the list of free pages whole, 8 bytes a page: after 100,000 instructions
// were consumed and pruned, each get_user_request wrote 496 KB and took
// 6.4 ms of CPU against 34 KB and 0.5 ms on a fresh store (a claim-shaped
// commit, measured in one run). Not writing the list (NoFreelistSync) makes
// every write transaction rebuild it by walking every page in use instead —
// 326 ms per open with 100,000 live instructions, where lm opens the store
// for every transaction — and the map free list (FreelistMapType) measured
// no better (0.35 against 0.43 ms CPU per commit fresh, 8.4 against 6.4 ms
// after the prune). So the list stays synced and short: once free pages
// outnumber used ones, the commit that freed them copies the data into a
// fresh file (as lm store compact does, under the lock the transaction
// holds), which costs a copy of at most 64 MiB once and takes the list back
// to nothing. 2048 free pages (8 MiB) write 16 KB per commit, about a fifth
// of a claim's own pages; past 64 MiB in use the copy would hold the lock
// for long enough to time other processes out, and lm store info reports
// what lm store compact would reclaim.
var (
	compactFreePages = 2048
	compactLivePages = 16384
)

// worthCompacting says whether the commit db just made left the store
// mostly free pages (see compactFreePages).
func worthCompacting(db *bolt.DB) bool {
	st := db.Stats()
	free := st.FreePageN + st.PendingPageN
	if free < compactFreePages {
		return false
	}
	pages := 0
	db.View(func(tx *bolt.Tx) error {
		pages = int(tx.Size()) / db.Info().PageSize
		return nil
	})
	live := pages - free
	return free > live && live <= compactLivePages
}

// compactAfterCommit rewrites the store without its free pages. The write
// that asked has committed already: a compaction that fails leaves the
// store as it was and is not that write's failure, though damage it meets
// marks the store as any reader would.
func (s *Store) compactAfterCommit() {
	defer func() {
		if r := recover(); r != nil {
			s.panicked(r)
		}
	}()
	s.compactHeld()
}

// commit runs fn in a write transaction and commits it only if fn changed
// something. A transaction that changed nothing is rolled back: committing it
// would still write a meta page and sync the file, and notifying would wake
// every waiter for no news — a waiter that re-checks the queue after each
// wake-up would then wake itself forever.
func commit(db *bolt.DB, fn func(*bolt.Tx) error) (changed bool, err error) {
	tx, err := db.Begin(true)
	if err != nil {
		return false, err
	}
	defer func() {
		// A panic (a damaged page met mid-transaction) must not leave the
		// transaction open: closing the database would wait for it forever.
		// The caller turns the panic into an error.
		if r := recover(); r != nil {
			tx.Rollback()
			panic(r)
		}
	}()
	if err := fn(tx); err != nil {
		tx.Rollback()
		return false, err
	}
	// bbolt materialises a node for every bucket page a put, delete,
	// bucket creation or sequence change touches, and for nothing else.
	if stats := tx.Stats(); stats.GetNodeCount() == 0 {
		return false, tx.Rollback()
	}
	return true, tx.Commit()
}

// Version reads the schema version: 0 for a store never written.
func Version(tx *bolt.Tx) int {
	b := tx.Bucket(metaBucket)
	if b == nil {
		return 0
	}
	v := b.Get(versionKey)
	if len(v) == 0 {
		return 0
	}
	n := 0
	fmt.Sscanf(string(v), "%d", &n)
	return n
}

func (s *Store) checkVersion(tx *bolt.Tx) error {
	if b := tx.Bucket(metaBucket); b != nil {
		if v := b.Get(versionKey); v != nil {
			if _, err := decodeMeta(versionKey, v); err != nil {
				return &CorruptError{Bucket: string(metaBucket), Key: printable(versionKey), Err: err}
			}
		}
	}
	if v := Version(tx); v > SchemaVersion {
		return &VersionError{Path: s.Path, Found: v, Wanted: SchemaVersion}
	}
	return nil
}

// A migration moves a store from version To-1 to To, inside the write
// transaction that first opens the store with this binary.
type migration struct {
	To    int
	Apply func(*bolt.Tx) error
}

// migrations lists every layout change in order. Version 1 is the first
// layout: domain packages create their buckets on first use.
var migrations = []migration{
	{To: 1, Apply: func(*bolt.Tx) error { return nil }},
}

func (s *Store) migrate(tx *bolt.Tx) error {
	v := Version(tx)
	if v == SchemaVersion {
		return nil
	}
	if err := s.checkVersion(tx); err != nil {
		return err
	}
	for _, m := range migrations {
		if m.To <= v {
			continue
		}
		if err := m.Apply(tx); err != nil {
			return fmt.Errorf("migrate store %s to schema %d: %w", s.Path, m.To, err)
		}
	}
	b, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	return b.Put(versionKey, fmt.Appendf(nil, "%d", SchemaVersion))
}

// fileLock is a flock on the sidecar file. It holds a raw descriptor: every
// (*os.File).Fd call costs two fcntl calls, and this runs on every
// transaction of every process.
type fileLock struct {
	fd int
	// beforeMark, when set, hears the mark notify is about to write.
	beforeMark func(mark)
}

// acquire takes the sidecar lock. When another process holds it, the wait
// is a blocking flock, so the kernel wakes this process the moment the
// holder lets go: polling, it met the lock free only by chance between a
// busy holder's back-to-back commits, and a command beside a busy gateway
// waited seconds. A blocking flock cannot be abandoned, so it runs on a
// goroutine of its own that the caller leaves at its timeout or
// cancellation; a lock that abandoned wait takes later is released at once.
func acquire(ctx context.Context, path string, exclusive bool, timeout time.Duration) (*fileLock, error) {
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC, 0o600)
	if err != nil && !exclusive && isUnwritable(err) {
		// Read-only media: share the lock file if there is one; without
		// one, no writer can exist either.
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if errors.Is(err, syscall.ENOENT) {
			return &fileLock{fd: -1}, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open store lock %s: %w", path, err)
	}
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err = flock(fd, how|syscall.LOCK_NB)
	if err == nil {
		return &fileLock{fd: fd}, nil
	}
	if !errors.Is(err, syscall.EWOULDBLOCK) {
		syscall.Close(fd)
		return nil, fmt.Errorf("lock store: %w", err)
	}
	budget := blockedWaits
	if !budget.reserve() {
		// Too many waits already left behind on a lock nobody releases:
		// fail now rather than leave one more thread blocked.
		syscall.Close(fd)
		return nil, ErrLocked
	}
	locked := make(chan error, 1)
	go func() { locked <- flock(fd, how) }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	var gaveUp error
	select {
	case err := <-locked:
		budget.release()
		if err != nil {
			syscall.Close(fd)
			return nil, fmt.Errorf("lock store: %w", err)
		}
		return &fileLock{fd: fd}, nil
	case <-timer.C:
		gaveUp = ErrLocked
	case <-ctx.Done():
		gaveUp = ctx.Err()
	}
	// The wait goes on without us: whenever it ends, closing the
	// descriptor drops whatever it took.
	go func() {
		<-locked
		syscall.Close(fd)
		budget.release()
	}()
	return nil, gaveUp
}

// flock is syscall.Flock, restarted when a signal interrupts it.
func flock(fd, how int) error {
	for {
		if err := syscall.Flock(fd, how); !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// blockedWaits counts this process's blocking waits for a store lock,
// those left behind included: each holds an OS thread, so a process whose
// every transaction times out on a lock held forever would otherwise
// gather them without end. The budget is the process's, for every store it
// opens; within a process one transaction at a time waits per store, so
// only left-behind waits add up, and a spent budget means locks held past
// many timeouts: the next wait fails as one that timed out would.
var blockedWaits = waitBudget{free: make(chan struct{}, 64)}

type waitBudget struct{ free chan struct{} }

func (b waitBudget) reserve() bool {
	select {
	case b.free <- struct{}{}:
		return true
	default:
		return false
	}
}

func (b waitBudget) release() { <-b.free }

// notify tells watchers that a write committed. Writing its mark at offset
// 0 raises an inotify IN_MODIFY on the sidecar without growing it.
func (l *fileLock) notify() {
	m := newMark()
	if then := l.beforeMark; then != nil {
		l.beforeMark = nil
		then(m)
	}
	syscall.Pwrite(l.fd, m[:], 0)
}

// A mark is what a commit's notify writes at the start of the lock file: a
// tag, this process's random id and the count of its commits, so every
// commit of any process leaves other bytes there than the one before. Read
// back, it tells whether the store changed since a commit without a
// transaction (see SeenByTrailers). The tag is not the line break that
// earlier versions write there alone: a mark without it tells nothing.
type mark [16]byte

var (
	// processMark is drawn at the first commit, not at every start.
	processMark = sync.OnceValue(func() (id [7]byte) {
		rand.Read(id[:])
		return id
	})
	marksMade atomic.Uint64
)

func newMark() (m mark) {
	m[0] = 'm'
	id := processMark()
	copy(m[1:8], id[:])
	binary.BigEndian.PutUint64(m[8:], marksMade.Add(1))
	return m
}

// latest is the mark of the store's latest commit; held, no commit comes
// between reading it and letting go.
func (l *fileLock) latest() mark { return readMark(l.fd) }

// latestMark reads the mark of the store's latest commit without taking
// the lock.
func (s *Store) latestMark() mark {
	fd, err := syscall.Open(s.LockPath(), syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return mark{}
	}
	defer syscall.Close(fd)
	return readMark(fd)
}

// readMark reads the mark at the start of the lock file fd: the zero mark
// when it cannot be read, or when an earlier version's line break is
// there: every commit of that version writes the same byte, so two of them
// in a row leave the same bytes, and which commit it stands for cannot be
// told.
func readMark(fd int) (m mark) {
	if n, _ := syscall.Pread(fd, m[:], 0); n != len(m) || m[0] != 'm' {
		return mark{}
	}
	return m
}

// release unlocks by closing: closing the descriptor drops its flock.
func (l *fileLock) release() {
	syscall.Close(l.fd)
}

// growStep is how much a write grows the file by when its pages pass the
// end: bbolt's 16 MiB made a fresh store of a few instructions 16.8 MB;
// 1 MiB makes it 1.1 MB, and 100,000 instructions added in one batch took
// 2.2–2.7 s against 3.5–4.9 s with 16 MiB steps (one run, alternating).
var growStep = func() int {
	if fileSizeLimited() {
		// Under a file size limit (ulimit -f) big steps fail long
		// before the data reaches it.
		return 64 << 10
	}
	return 1 << 20
}()
