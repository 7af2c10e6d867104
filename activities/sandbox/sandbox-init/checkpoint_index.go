package main

// The index: for each entry, its path's length and bytes, then kind, mode, size, inode, mtime,
// ctime; in path order, so that a checkpoint from the watcher's paths (checkpoint_delta.go) looks
// entries up without reading them into a map, and writes the next index by merging its few
// changes in. Two kinds of entry are no file: kindRecheck (look at it again next time) and, first,
// under a path no file can have (it starts with NUL), the watcher's generation and epoch the index
// was made at. An index in no order (made before it had one) is sorted once when read.

import (
	"encoding/binary"
	"os"
	"sort"
	"strings"
	"unsafe"
)

const (
	kindRecheck    = '?'
	kindWatch      = 'w'
	kindCheckpoint = 'c'
	// In a delta's changes (checkpoint_delta.go): the entry is gone.
	kindGone         = 0
	watchPrefix      = "\x00watch "
	checkpointPrefix = "\x00checkpoint "
	entryBytes       = 1 + 4 + 8*4
)

// watchState is what the index holds besides files: the watcher's generation ("" for none) and
// epoch, how many checkpoints in a row were made from its paths only, and the checkpoint it is
// the index of ("" in an index from before it was recorded).
type watchState struct {
	gen        string
	epoch      uint64
	deltas     int64
	checkpoint string
}

func watchKey(gen string) string {
	return watchPrefix + gen
}

type indexEntry struct {
	path string
	st   treeStat
	// Where the entry starts in the file read (sortedIndex.data).
	at int
}

// sortedIndex is an index as read: its entries in path order, and, when they were in that
// order in the file, the file's bytes (a delta copies what it did not change from there).
type sortedIndex struct {
	entries []indexEntry
	data    []byte
}

// raw is the file's bytes of entries [i, j), when the file had them in order.
func (ix *sortedIndex) raw(i, j int) []byte {
	if i >= j {
		return nil
	}
	last := ix.entries[j-1]
	return ix.data[ix.entries[i].at : last.at+4+len(last.path)+entryBytes]
}

func (ix *sortedIndex) find(path string) int {
	return sort.Search(len(ix.entries), func(i int) bool { return ix.entries[i].path >= path })
}

func (ix *sortedIndex) get(path string) (treeStat, bool) {
	if i := ix.find(path); i < len(ix.entries) && ix.entries[i].path == path {
		return ix.entries[i].st, true
	}
	return treeStat{}, false
}

// below is every entry under dir (a path of its own, without the trailing slash).
func (ix *sortedIndex) below(dir string) []indexEntry {
	prefix := dir + "/"
	start := ix.find(prefix)
	end := start
	for end < len(ix.entries) && strings.HasPrefix(ix.entries[end].path, prefix) {
		end++
	}
	return ix.entries[start:end]
}

func (ix *sortedIndex) toMap() map[string]treeStat {
	out := make(map[string]treeStat, len(ix.entries))
	for _, e := range ix.entries {
		out[e.path] = e.st
	}
	return out
}

// readIndex reads an index file; a missing or damaged one is empty (everything is new then).
func readIndex(file string) (*sortedIndex, watchState) {
	data, err := os.ReadFile(file)
	if err != nil {
		return &sortedIndex{}, watchState{}
	}
	return parseIndex(data)
}

// parseIndex reads an index from its bytes, which it keeps (unchanged, for as long as the index is used).
func parseIndex(data []byte) (*sortedIndex, watchState) {
	var state watchState
	ix := &sortedIndex{entries: make([]indexEntry, 0, len(data)/64), data: data}
	ordered := true
	for at := 0; len(data) >= 4; at = len(ix.data) - len(data) {
		n := int(binary.LittleEndian.Uint32(data))
		if len(data) < 4+n+entryBytes {
			return &sortedIndex{}, watchState{}
		}
		// The file's bytes are kept, unchanged, for as long as the program runs: no copy of each path.
		path := unsafe.String(unsafe.SliceData(data[4:]), n)
		rest := data[4+n:]
		st := treeStat{
			Kind:  rest[0],
			Mode:  binary.LittleEndian.Uint32(rest[1:]),
			Size:  int64(binary.LittleEndian.Uint64(rest[5:])),
			Ino:   binary.LittleEndian.Uint64(rest[13:]),
			Mtime: int64(binary.LittleEndian.Uint64(rest[21:])),
			Ctime: int64(binary.LittleEndian.Uint64(rest[29:])),
		}
		if gen, ok := strings.CutPrefix(path, watchPrefix); ok && st.Kind == kindWatch {
			state.gen, state.epoch, state.deltas = strings.Clone(gen), uint64(st.Size), st.Mtime
			// Only before the files, where it is written: else the file's runs of entries are not copied.
			ordered = ordered && len(ix.entries) == 0
		} else if id, ok := strings.CutPrefix(path, checkpointPrefix); ok && st.Kind == kindCheckpoint {
			state.checkpoint = strings.Clone(id)
			ordered = ordered && len(ix.entries) == 0
		} else {
			if k := len(ix.entries); k > 0 && ix.entries[k-1].path >= path {
				ordered = false
			}
			ix.entries = append(ix.entries, indexEntry{path, st, at})
		}
		data = rest[entryBytes:]
	}
	if !ordered {
		sort.Slice(ix.entries, func(i, j int) bool { return ix.entries[i].path < ix.entries[j].path })
		ix.data = nil
	}
	return ix, state
}

// indexWriter builds an index file in memory; entries must come in path order.
type indexWriter struct {
	out []byte
}

func (iw *indexWriter) add(path string, st treeStat) {
	iw.out = binary.LittleEndian.AppendUint32(iw.out, uint32(len(path)))
	iw.out = append(iw.out, path...)
	iw.out = append(iw.out, st.Kind)
	iw.out = binary.LittleEndian.AppendUint32(iw.out, st.Mode)
	iw.out = binary.LittleEndian.AppendUint64(iw.out, uint64(st.Size))
	iw.out = binary.LittleEndian.AppendUint64(iw.out, st.Ino)
	iw.out = binary.LittleEndian.AppendUint64(iw.out, uint64(st.Mtime))
	iw.out = binary.LittleEndian.AppendUint64(iw.out, uint64(st.Ctime))
}

// saveFile writes the index under a temporary name, then renames it into place.
func (iw *indexWriter) saveFile(file string) error {
	partial := file + ".partial"
	if err := os.WriteFile(partial, iw.out, 0600); err != nil {
		return err
	}
	return os.Rename(partial, file)
}

// save is saveFile within a checkpoint: returns the index's bytes.
func (iw *indexWriter) save(file string) []byte {
	if err := iw.saveFile(file); err != nil {
		checkpointFail("checkpoint: %v", err)
	}
	return iw.out
}

// writeIndex writes a whole index (a walk's) in path order.
func writeIndex(file string, index map[string]treeStat) []byte {
	return wholeIndex(index).save(file)
}

func wholeIndex(index map[string]treeStat) *indexWriter {
	paths := make([]string, 0, len(index))
	for path := range index {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	iw := &indexWriter{out: make([]byte, 0, len(index)*96)}
	for _, path := range paths {
		iw.add(path, index[path])
	}
	return iw
}

// deltaIndex is the last index with a delta's changes (kindGone: removed) merged in, copying the
// runs of entries it did not change as they were in the file.
func deltaIndex(heads []indexEntry, base *sortedIndex, changes map[string]treeStat) *indexWriter {
	paths := make([]string, 0, len(changes))
	for path := range changes {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	iw := &indexWriter{out: make([]byte, 0, len(base.data)+(len(paths)+1)*128)}
	for _, head := range heads {
		iw.add(head.path, head.st)
	}
	i := 0
	for _, path := range paths {
		j := base.find(path)
		iw.copyRun(base, i, j)
		if j < len(base.entries) && base.entries[j].path == path {
			j++
		}
		if st := changes[path]; st.Kind != kindGone {
			iw.add(path, st)
		}
		i = j
	}
	iw.copyRun(base, i, len(base.entries))
	return iw
}

func (iw *indexWriter) copyRun(base *sortedIndex, i, j int) {
	if base.data != nil {
		iw.out = append(iw.out, base.raw(i, j)...)
		return
	}
	for ; i < j; i++ {
		iw.add(base.entries[i].path, base.entries[i].st)
	}
}
