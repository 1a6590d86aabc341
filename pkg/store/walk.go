package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"os"

	bolt "go.etcd.io/bbolt"
)

// bbolt's on-disk layout, as far as a bounded walk needs it.
const (
	pageHeaderSize  = 16 // id u64, flags u16, count u16, overflow u32
	elementSize     = 16 // branch: pos, ksize, pgid; leaf: flags, pos, ksize, vsize
	inBucketSize    = 16 // root pgid u64, sequence u64
	branchPageFlag  = 0x01
	leafPageFlag    = 0x02
	freelistFlag    = 0x10
	bucketLeafFlag  = 0x01
	noFreelist      = ^uint64(0)
	metaMagic       = 0xED0CDAED
	metaPageSizeOff = pageHeaderSize + 8
	metaFreelistOff = pageHeaderSize + 32
	metaPgidOff     = pageHeaderSize + 40
	metaTxidOff     = pageHeaderSize + 48
	metaSumOff      = pageHeaderSize + 56
)

// meta is what a store's newest valid meta page says.
type meta struct {
	pageSize, freelist, hwm, txid uint64
}

// readMeta reads the two meta pages straight from the file and returns the
// newer valid one, as bbolt would use it.
func readMeta(f *os.File) (meta, error) {
	var best meta
	found := false
	buf := make([]byte, metaSumOff+8)
	offset := int64(0)
	for range 2 {
		if _, err := f.ReadAt(buf, offset); err != nil {
			break
		}
		m := meta{
			pageSize: uint64(binary.LittleEndian.Uint32(buf[metaPageSizeOff:])),
			freelist: binary.LittleEndian.Uint64(buf[metaFreelistOff:]),
			hwm:      binary.LittleEndian.Uint64(buf[metaPgidOff:]),
			txid:     binary.LittleEndian.Uint64(buf[metaTxidOff:]),
		}
		sum := fnv.New64a()
		sum.Write(buf[pageHeaderSize:metaSumOff])
		valid := binary.LittleEndian.Uint32(buf[pageHeaderSize:]) == metaMagic &&
			sum.Sum64() == binary.LittleEndian.Uint64(buf[metaSumOff:]) && m.pageSize >= 512
		if valid && (!found || m.txid > best.txid) {
			best, found = m, true
		}
		if offset == 0 {
			if !valid {
				offset = int64(os.Getpagesize()) // where bbolt looks when meta 0 is garbage
			} else {
				offset = int64(m.pageSize)
			}
		}
	}
	if !found {
		return meta{}, errors.New("neither meta page is valid: this is not a store, or its first pages were overwritten")
	}
	return best, nil
}

// walker follows the b-tree by reading the file with bounds checks instead
// of through bbolt's memory map, so a pointer past the end, a loop or an
// overlap is reported rather than followed. Every page is visited once, so
// the walk's time and memory are bounded by the file's size.
type walker struct {
	f      *os.File
	psize  uint64
	hwm    uint64 // pages the meta page counts
	seen   map[uint64]bool
	report func(error)
	ok     bool
}

// walk checks the pages of the b-tree and the freelist that tx reads. It
// returns true when they are sound enough for bbolt's own check, which
// trusts every page pointer and loops over every page an overflow count
// claims.
func (s *Store) walk(tx *bolt.Tx, report func(error)) bool {
	f, err := os.Open(s.Path)
	if err != nil {
		report(fmt.Errorf("open the file to check it: %w", err))
		return false
	}
	defer f.Close()
	w := &walker{f: f, psize: uint64(tx.DB().Info().PageSize), seen: map[uint64]bool{0: true, 1: true}, report: report, ok: true}
	w.hwm = uint64(tx.Size()) / w.psize
	if fi, err := f.Stat(); err == nil && uint64(fi.Size())/w.psize < w.hwm {
		w.hwm = uint64(fi.Size()) / w.psize // what is missing was reported as truncation
		w.ok = false
	}
	if m, err := readMeta(f); err == nil && m.txid == uint64(tx.ID()) {
		w.freelist(m.freelist)
	}
	w.tree(uint64(tx.Cursor().Bucket().Root()), "the root bucket")
	return w.ok
}

func (w *walker) fail(format string, args ...any) {
	w.ok = false
	w.report(fmt.Errorf(format, args...))
}

// page reads page id and the pages its overflow spans, or reports why it
// cannot be part of the tree.
func (w *walker) page(id uint64, from string) []byte {
	if id < 2 || id >= w.hwm {
		w.fail("page %d (in %s): out of bounds: the file has pages 2 to %d", id, from, w.hwm-1)
		return nil
	}
	if w.seen[id] {
		w.fail("page %d (in %s): referenced twice", id, from)
		return nil
	}
	head := make([]byte, pageHeaderSize)
	if _, err := w.f.ReadAt(head, int64(id*w.psize)); err != nil {
		w.fail("page %d (in %s): %v", id, from, err)
		return nil
	}
	if got := binary.LittleEndian.Uint64(head); got != id {
		w.fail("page %d (in %s): its header says page %d", id, from, got)
		return nil
	}
	overflow := uint64(binary.LittleEndian.Uint32(head[12:]))
	if id+overflow >= w.hwm {
		w.fail("page %d (in %s): %d overflow pages run past the last page %d", id, from, overflow, w.hwm-1)
		return nil
	}
	for i := id; i <= id+overflow; i++ {
		if w.seen[i] {
			w.fail("page %d (in %s): overlaps page %d", id, from, i)
			return nil
		}
		w.seen[i] = true
	}
	buf := make([]byte, (overflow+1)*w.psize)
	if _, err := w.f.ReadAt(buf, int64(id*w.psize)); err != nil {
		w.fail("page %d (in %s): %v", id, from, err)
		return nil
	}
	return buf
}

func (w *walker) freelist(id uint64) {
	if id == noFreelist {
		return
	}
	p := w.page(id, "the freelist")
	if p == nil {
		return
	}
	if flags := binary.LittleEndian.Uint16(p[8:]); flags&freelistFlag == 0 {
		w.fail("page %d: the freelist page has type flags %#x", id, flags)
		return
	}
	count, first := uint64(binary.LittleEndian.Uint16(p[10:])), uint64(0)
	if count == 0xFFFF {
		count, first = binary.LittleEndian.Uint64(p[pageHeaderSize:]), 1
	}
	if (first+count)*8 > uint64(len(p)-pageHeaderSize) {
		w.fail("page %d: the freelist claims %d free pages, more than its %d bytes hold", id, count, len(p))
		return
	}
	for i := first; i < first+count; i++ {
		if free := binary.LittleEndian.Uint64(p[pageHeaderSize+i*8:]); free < 2 || free >= w.hwm {
			w.fail("page %d: the freelist names page %d, outside the file's pages 2 to %d", id, free, w.hwm-1)
			return
		}
	}
}

// tree walks the b-tree rooted at page id.
func (w *walker) tree(id uint64, from string) {
	p := w.page(id, from)
	if p == nil {
		return
	}
	w.elements(p, fmt.Sprintf("page %d", id))
}

// elements checks the elements of a branch or leaf page (or an inline
// bucket's page) and follows what they point to.
func (w *walker) elements(p []byte, where string) {
	flags := binary.LittleEndian.Uint16(p[8:])
	count := int(binary.LittleEndian.Uint16(p[10:]))
	if flags != branchPageFlag && flags != leafPageFlag {
		w.fail("%s: not a branch or leaf page (type flags %#x)", where, flags)
		return
	}
	if pageHeaderSize+count*elementSize > len(p) {
		w.fail("%s: %d elements do not fit in %d bytes", where, count, len(p))
		return
	}
	for i := range count {
		off := pageHeaderSize + i*elementSize
		e := p[off : off+elementSize]
		if flags == branchPageFlag {
			pos, ksize := int(binary.LittleEndian.Uint32(e)), int(binary.LittleEndian.Uint32(e[4:]))
			if !fits(off, pos, ksize, len(p)) {
				w.fail("%s: element %d's key lies outside the page", where, i)
				return
			}
			w.tree(binary.LittleEndian.Uint64(e[8:]), where)
			continue
		}
		leafFlags := binary.LittleEndian.Uint32(e)
		pos, ksize, vsize := int(binary.LittleEndian.Uint32(e[4:])), int(binary.LittleEndian.Uint32(e[8:])), int(binary.LittleEndian.Uint32(e[12:]))
		if !fits(off, pos, ksize+vsize, len(p)) || ksize+vsize < ksize {
			w.fail("%s: element %d's key and value lie outside the page", where, i)
			return
		}
		if leafFlags&bucketLeafFlag == 0 {
			continue
		}
		start := off + pos
		value := p[start+ksize : start+ksize+vsize]
		name := printable(p[start : start+ksize])
		if len(value) < inBucketSize {
			w.fail("%s: bucket %s's header is %d bytes", where, name, len(value))
			continue
		}
		if root := binary.LittleEndian.Uint64(value); root != 0 {
			w.tree(root, "bucket "+name)
		} else if inline := value[inBucketSize:]; len(inline) < pageHeaderSize {
			w.fail("%s: inline bucket %s is %d bytes", where, name, len(inline))
		} else {
			w.elements(inline, "inline bucket "+name)
		}
	}
}

// fits reports whether n bytes at pos past the element at off stay within a
// page of size bytes.
func fits(off, pos, n, size int) bool {
	return pos >= 0 && n >= 0 && off+pos >= off && off+pos+n >= off+pos && off+pos+n <= size
}
