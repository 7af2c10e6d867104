package main

import (
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
)

func TestHandOverIsFullWithoutAnIndexOfThisWatcher(t *testing.T) {
	s := newDirtySet(100, 1<<20)
	s.markPath("workspace/a", false)
	for _, since := range []uint64{0, 99} {
		if out := s.handOver(since); !out.Full {
			t.Fatalf("since %d: a delta %+v", since, out)
		}
	}
}

func TestHandOverGivesWhatChangedSinceTheIndexAndAgainWhenItWasNotRecorded(t *testing.T) {
	s := newDirtySet(100, 1<<20)
	first := s.handOver(0)
	s.markPath("workspace/a", false)
	s.markPath("workspace/d", true)
	s.markInode(7)
	second := s.handOver(first.Epoch)
	want := map[string]bool{"workspace/a": false, "workspace/d": true}
	if second.Full || !reflect.DeepEqual(second.Paths, want) || !reflect.DeepEqual(second.Inos, []uint64{7}) {
		t.Fatalf("got %+v", second)
	}
	// The checkpoint of `second` was not recorded: the next one asks from `first` again.
	s.markPath("workspace/b", false)
	s.markPath("workspace/d", false)
	third := s.handOver(first.Epoch)
	want = map[string]bool{"workspace/a": false, "workspace/b": false, "workspace/d": true}
	if third.Full || !reflect.DeepEqual(third.Paths, want) {
		t.Fatalf("got %+v", third)
	}
	// Recorded this time: only what changed after it, and d no longer with its tree.
	s.markPath("workspace/c", false)
	fourth := s.handOver(third.Epoch)
	if fourth.Full || !reflect.DeepEqual(fourth.Paths, map[string]bool{"workspace/c": false}) || len(fourth.Inos) != 0 {
		t.Fatalf("got %+v", fourth)
	}
	// Marks before a recorded epoch are dropped: an index older than that cannot be answered.
	if out := s.handOver(first.Epoch); !out.Full {
		t.Fatalf("an index from before the pruned epochs got a delta: %+v", out)
	}
}

func TestLostEventsMakeEveryIndexFromBeforeThemFull(t *testing.T) {
	s := newDirtySet(100, 1<<20)
	base := s.handOver(0)
	s.markPath("workspace/a", false)
	s.lost()
	s.markPath("workspace/b", false)
	after := s.handOver(base.Epoch)
	if !after.Full {
		t.Fatalf("a delta after lost events: %+v", after)
	}
	s.markPath("workspace/c", false)
	if out := s.handOver(after.Epoch); out.Full || !reflect.DeepEqual(out.Paths, map[string]bool{"workspace/c": false}) {
		t.Fatalf("the index made after the loss got %+v", out)
	}
}

func TestASetPastItsLimitsIsLost(t *testing.T) {
	s := newDirtySet(3, 1<<20)
	base := s.handOver(0)
	for _, p := range []string{"workspace/a", "workspace/b", "workspace/c", "workspace/d"} {
		s.markPath(p, false)
	}
	if out := s.handOver(base.Epoch); !out.Full {
		t.Fatalf("past the count: %+v", out)
	}
	s = newDirtySet(100, 40)
	base = s.handOver(0)
	s.markPath("workspace/"+strings.Repeat("n", 20), false)
	s.markPath("workspace/"+strings.Repeat("n", 20), false)
	if out := s.handOver(base.Epoch); out.Full {
		t.Fatalf("one path marked twice counts once: %+v", out)
	}
	s.markPath("workspace/"+strings.Repeat("m", 20), false)
	if out := s.handOver(base.Epoch + 1); !out.Full {
		t.Fatalf("past the bytes: %+v", out)
	}
}

// event builds one fanotify event as the kernel writes it (metadata, then info records).
func event(mask uint64, records ...[]byte) []byte {
	var body []byte
	for _, r := range records {
		body = append(body, r...)
	}
	out := make([]byte, metadataLen, metadataLen+len(body))
	binary.LittleEndian.PutUint32(out, uint32(metadataLen+len(body)))
	out[4] = metadataVersion
	binary.LittleEndian.PutUint16(out[6:], metadataLen)
	binary.LittleEndian.PutUint64(out[8:], mask)
	return append(out, body...)
}

func fidRecord(infoType byte, ino uint32, name string) []byte {
	r := []byte{infoType, 0, 0, 0}
	r = append(r, make([]byte, 8)...) // fsid
	r = binary.LittleEndian.AppendUint32(r, 8)
	r = binary.LittleEndian.AppendUint32(r, fileidIno32Gen)
	r = binary.LittleEndian.AppendUint32(r, ino)
	r = binary.LittleEndian.AppendUint32(r, 1)
	if name != "" {
		r = append(append(r, name...), 0)
	}
	for len(r)%4 != 0 {
		r = append(r, 0)
	}
	binary.LittleEndian.PutUint16(r[2:], uint16(len(r)))
	return r
}

func TestParseEventsReadsDirectoryNameAndFileHandles(t *testing.T) {
	buf := append(event(fanModify, fidRecord(fanEventInfoDfidNam, 12, "f.txt"), fidRecord(fanEventInfoFid, 15, "")),
		event(fanCreate|fanOnDir, fidRecord(fanEventInfoDfidNam, 2, "dir\nwith newline"))...)
	buf = append(buf, event(fanQOverflow)...)
	events, err := parseEvents(buf)
	if err != nil || len(events) != 3 {
		t.Fatalf("%v %d", err, len(events))
	}
	dir, _ := handleInode(events[0].dirHandle)
	file, _ := handleInode(events[0].handle)
	if events[0].name != "f.txt" || dir != 12 || file != 15 || events[0].mask != fanModify {
		t.Fatalf("got %+v", events[0])
	}
	if events[1].name != "dir\nwith newline" || events[1].handle != nil || events[1].mask&fanOnDir == 0 {
		t.Fatalf("got %+v", events[1])
	}
	if events[2].mask != fanQOverflow || events[2].dirHandle != nil {
		t.Fatalf("got %+v", events[2])
	}
	for _, bad := range [][]byte{buf[:10], buf[:len(buf)-3], append(event(fanModify), 1, 2)} {
		if _, err := parseEvents(bad); err == nil {
			t.Fatalf("no error for %v", bad)
		}
	}
}
