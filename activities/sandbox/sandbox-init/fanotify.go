package main

// The kernel's fanotify (Linux 5.9 or newer for FAN_REPORT_DFID_NAME with FAN_MARK_FILESYSTEM),
// called directly as the rest of this binary calls what package syscall does not wrap: the
// binary stays free of dependencies.

import (
	"encoding/binary"
	"errors"
	"syscall"
	"unsafe"
)

const (
	fanCloexec      = 0x1
	fanNonblock     = 0x2
	fanReportFid    = 0x200
	fanReportDirFid = 0x400
	fanReportName   = 0x800

	fanMarkAdd        = 0x1
	fanMarkFilesystem = 0x100

	fanModify     = 0x2
	fanAttrib     = 0x4
	fanCloseWrite = 0x8
	fanMovedFrom  = 0x40
	fanMovedTo    = 0x80
	fanCreate     = 0x100
	fanDelete     = 0x200
	fanQOverflow  = 0x4000
	fanOnDir      = 0x40000000

	// What changes a run's files: contents (a write, a truncate, the last close of a file written
	// through a shared mapping, which writes no FAN_MODIFY), mode and links (FAN_ATTRIB), names.
	watchedEvents = fanModify | fanAttrib | fanCloseWrite | fanMovedFrom | fanMovedTo | fanCreate | fanDelete | fanOnDir
	// Events that change a directory's entries: the name they carry may be a directory with everything under it.
	direntEvents = fanMovedFrom | fanMovedTo | fanCreate | fanDelete

	// O_PATH, which package syscall does not name.
	oPath = 0x200000

	fanEventInfoFid     = 1
	fanEventInfoDfidNam = 2
	fanEventInfoDfid    = 3

	metadataVersion = 3
	metadataLen     = 24

	// ext4's file handles (and every filesystem's generic ones): a 32-bit inode number, then its generation.
	fileidIno32Gen       = 1
	fileidIno32GenParent = 2
)

// fanEvent is one event of a group that reports file handles: the directory's handle and the
// entry's name (DFID_NAME; name "." for an event on the directory itself), and the object's own
// handle (FID) for events on files. A handle is a struct file_handle as open_by_handle_at takes it.
type fanEvent struct {
	mask      uint64
	dirHandle []byte
	name      string
	handle    []byte
}

// parseEvents splits what one read returned into events; malformed input is an error (the
// watcher then gives up, and the next checkpoint walks everything).
func parseEvents(buf []byte) ([]fanEvent, error) {
	var events []fanEvent
	for len(buf) > 0 {
		if len(buf) < metadataLen {
			return nil, errors.New("short fanotify event")
		}
		eventLen := int(binary.LittleEndian.Uint32(buf))
		metaLen := int(binary.LittleEndian.Uint16(buf[6:]))
		if buf[4] != metadataVersion || eventLen < metaLen || metaLen < metadataLen || eventLen > len(buf) {
			return nil, errors.New("malformed fanotify event")
		}
		ev := fanEvent{mask: binary.LittleEndian.Uint64(buf[8:])}
		for info := buf[metaLen:eventLen]; len(info) > 0; {
			if len(info) < 4 {
				return nil, errors.New("short fanotify info record")
			}
			infoType, infoLen := info[0], int(binary.LittleEndian.Uint16(info[2:]))
			if infoLen < 4 || infoLen > len(info) {
				return nil, errors.New("malformed fanotify info record")
			}
			if err := ev.addInfo(infoType, info[:infoLen]); err != nil {
				return nil, err
			}
			info = info[infoLen:]
		}
		events = append(events, ev)
		buf = buf[eventLen:]
	}
	return events, nil
}

// addInfo reads one record: header (4 bytes), fsid (8), struct file_handle, then a name for DFID_NAME.
func (ev *fanEvent) addInfo(infoType byte, record []byte) error {
	if infoType != fanEventInfoFid && infoType != fanEventInfoDfidNam && infoType != fanEventInfoDfid {
		return nil
	}
	if len(record) < 20 {
		return errors.New("short file handle record")
	}
	handleLen := 8 + int(binary.LittleEndian.Uint32(record[12:]))
	if 12+handleLen > len(record) {
		return errors.New("malformed file handle record")
	}
	handle := append([]byte(nil), record[12:12+handleLen]...)
	switch infoType {
	case fanEventInfoFid:
		ev.handle = handle
	case fanEventInfoDfid:
		ev.dirHandle, ev.name = handle, "."
	case fanEventInfoDfidNam:
		name := record[12+handleLen:]
		end := 0
		for end < len(name) && name[end] != 0 {
			end++
		}
		if end == len(name) || end == 0 {
			return errors.New("malformed name in fanotify record")
		}
		ev.dirHandle, ev.name = handle, string(name[:end])
	}
	return nil
}

// handleInode reads the inode number out of a generic 32-bit handle; ok is false for any other kind.
func handleInode(handle []byte) (uint64, bool) {
	if len(handle) < 16 {
		return 0, false
	}
	kind := int32(binary.LittleEndian.Uint32(handle[4:]))
	if kind != fileidIno32Gen && kind != fileidIno32GenParent {
		return 0, false
	}
	return uint64(binary.LittleEndian.Uint32(handle[8:])), true
}

func fanotifyInit(flags, eventFlags uint) (int, error) {
	fd, _, errno := syscall.Syscall(syscall.SYS_FANOTIFY_INIT, uintptr(flags), uintptr(eventFlags), 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}

// fanotifyMark marks what dirfd is (pathname NULL); 64-bit kernels only (the mask is one argument).
func fanotifyMark(fd int, flags uint, mask uint64, dirfd int) error {
	_, _, errno := syscall.Syscall6(syscall.SYS_FANOTIFY_MARK, uintptr(fd), uintptr(flags), uintptr(mask), uintptr(dirfd), 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func openByHandleAt(mountFd int, handle []byte, flags int) (int, error) {
	fd, _, errno := syscall.Syscall(sysOpenByHandleAt, uintptr(mountFd), uintptr(unsafe.Pointer(&handle[0])), uintptr(flags))
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
