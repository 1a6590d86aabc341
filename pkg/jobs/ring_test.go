package jobs

import (
	"bytes"
	"path/filepath"
	"testing"
)

func TestRingCursorsSurviveEviction(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := createRing(path, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var all bytes.Buffer
	for _, s := range []string{"0123456789", "abcdefghij", "KLMNOPQRSTUVWXYZ-and-more"} {
		w.Write([]byte(s))
		all.WriteString(s)
	}
	total := uint64(all.Len())
	c, err := readRing(path, 0, 1024)
	if err != nil {
		t.Fatal(err)
	}
	if c.Evicted != total-16 || c.From != total-16 || c.To != total || c.Data != all.String()[total-16:] {
		t.Fatalf("read from 0: %+v", c)
	}
	c, _ = readRing(path, total-5, 3)
	if c.Data != all.String()[total-5:total-2] || c.Evicted != 0 || c.To != total-2 {
		t.Fatalf("read from the middle: %+v", c)
	}
	c, _ = readRing(path, total+100, 10)
	if c.From != total || c.To != total || c.Data != "" {
		t.Fatalf("read past the end: %+v", c)
	}
}

func TestRingChunkEndsOnRuneBoundary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, _ := createRing(path, 64)
	defer w.Close()
	w.Write([]byte("aé€b"))          // 1 + 2 + 3 + 1 bytes
	c, _ := readRing(path, 0, 5)     // would cut € in half
	if c.Data != "aé" || c.To != 3 { // stops before it
		t.Fatalf("%+v", c)
	}
	c, _ = readRing(path, c.To, 5)
	if c.Data != "€b" {
		t.Fatalf("%+v", c)
	}
}

func FuzzRing(f *testing.F) {
	f.Add([]byte("hello world"), uint8(7), uint16(3), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, capacity uint8, from uint16, max uint8) {
		path := filepath.Join(t.TempDir(), "ring")
		w, err := createRing(path, int64(capacity)+1)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.Write(data)
		c, err := readRing(path, uint64(from), int(max)+1)
		if err != nil {
			t.Fatal(err)
		}
		if c.To > uint64(len(data)) || c.From > c.To || c.To-c.From != uint64(len(c.Data)) {
			t.Fatalf("bad chunk %+v for %d bytes", c, len(data))
		}
		if c.Data != string(data[c.From:c.To]) {
			t.Fatalf("chunk %q is not bytes %d..%d", c.Data, c.From, c.To)
		}
	})
}

// TestRingReadWhileLapped reads the oldest retained bytes while the writer
// overwrites them: every byte a read returns must be the one written at its
// cursor, never a newer byte that took its place.
func TestRingReadWhileLapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ring")
	w, err := createRing(path, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	const total = 512 << 10
	done := make(chan struct{})
	go func() {
		defer close(done)
		var cursor uint64
		buf := make([]byte, 24)
		for cursor < total {
			n := 1 + int(cursor%uint64(len(buf)))
			for i := range n {
				buf[i] = byte((cursor + uint64(i)) % 251)
			}
			w.Write(buf[:n])
			cursor += uint64(n)
		}
	}()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			if reads == 0 {
				t.Fatal("no read overlapped the writer")
			}
			return
		default:
		}
		c, err := readRing(path, 0, 64)
		if err != nil {
			t.Fatal(err)
		}
		for i := range len(c.Data) {
			if want := byte((c.From + uint64(i)) % 251); c.Data[i] != want {
				t.Fatalf("read %d: byte at cursor %d is %d, want %d (chunk %d..%d)", reads, c.From+uint64(i), c.Data[i], want, c.From, c.To)
			}
		}
	}
}
