package main

// dirtySet is what the watcher (watch.go) knows changed in a run's files, by epoch: every event
// it reads is tagged with the current epoch, and each hand-over to a checkpoint starts a new
// one. A checkpoint's index records the epoch it was handed (all events before it are in the
// index); the next checkpoint asks for everything since then, so one that was not recorded is
// covered again by the next. Whatever the set cannot vouch for makes the hand-over "full": a
// checkpoint then walks everything.
type dirtySet struct {
	epoch uint64
	paths map[string]dirtyMark
	inos  map[uint64]uint64
	// Events of epochs up to this one were lost (the kernel's queue overflowed, the set grew too big); 0: none.
	lostAt uint64
	// Marks of epochs before this one were dropped: a checkpoint recorded them.
	prunedBelow uint64
	// The most marks kept, and bytes of their paths (a run's names are up to 4 KiB each).
	limit, maxBytes, bytes int
}

type dirtyMark struct {
	// The last epoch the path changed in, and the last one it may have come or gone with
	// everything under it (an entry of its directory made, removed or renamed).
	epoch, treeEpoch uint64
}

// handover is what a checkpoint gets: Full, or every path (true: with everything under it) and
// inode number (the other names of a file with several links) that changed since its index.
type handover struct {
	Full  bool
	Epoch uint64
	Paths map[string]bool
	Inos  []uint64
}

func newDirtySet(limit, maxBytes int) *dirtySet {
	return &dirtySet{epoch: 1, paths: map[string]dirtyMark{}, inos: map[uint64]uint64{}, limit: limit, maxBytes: maxBytes}
}

func (s *dirtySet) markPath(path string, tree bool) {
	mark, known := s.paths[path]
	if !known {
		s.bytes += len(path)
	}
	mark.epoch = s.epoch
	if tree {
		mark.treeEpoch = s.epoch
	}
	s.paths[path] = mark
	s.checkSize()
}

func (s *dirtySet) markInode(ino uint64) {
	s.inos[ino] = s.epoch
	s.checkSize()
}

// lost: events were lost; everything before the next hand-over is unknown.
func (s *dirtySet) lost() {
	s.lostAt = s.epoch
	s.paths = map[string]dirtyMark{}
	s.inos = map[uint64]uint64{}
	s.bytes = 0
}

func (s *dirtySet) checkSize() {
	if len(s.paths)+len(s.inos) > s.limit || s.bytes > s.maxBytes {
		s.lost()
	}
}

// handOver answers a checkpoint whose index holds everything before epoch `since` (0: it has no
// such index) and starts a new epoch, which it returns for the new index.
func (s *dirtySet) handOver(since uint64) handover {
	out := handover{Full: since == 0 || since > s.epoch || since < s.prunedBelow || since <= s.lostAt}
	if !out.Full {
		out.Paths = map[string]bool{}
		for path, mark := range s.paths {
			if mark.epoch < since {
				delete(s.paths, path)
				s.bytes -= len(path)
			} else {
				out.Paths[path] = mark.treeEpoch >= since
			}
		}
		for ino, epoch := range s.inos {
			if epoch < since {
				delete(s.inos, ino)
			} else {
				out.Inos = append(out.Inos, ino)
			}
		}
		s.prunedBelow = since
	}
	s.epoch++
	out.Epoch = s.epoch
	return out
}
