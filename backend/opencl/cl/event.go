package cl

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"
)

// Event is an OpenCL event: the completion of one enqueued command. Release
// it when done.
type Event struct {
	t    *fnTable
	id   uintptr
	what string // the command, for messages
}

// Command execution states (cl_int); negative values are error codes.
const (
	StatusComplete  int32 = 0
	StatusRunning   int32 = 1
	StatusSubmitted int32 = 2
	StatusQueued    int32 = 3
)

// Wait blocks until the command completes. A command that ended in error
// makes Wait fail with CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
func (e *Event) Wait() error {
	if e.id == 0 {
		return errors.New("opencl: Wait on a released event")
	}
	ids := []uintptr{e.id}
	return annotate(e.t.status(fnWaitForEvents, 1, uintptr(unsafe.Pointer(&ids[0]))), "%s", e.what)
}

// WaitForEvents waits for every event, which must all come from the same
// platform.
func WaitForEvents(events ...*Event) error {
	if len(events) == 0 {
		return nil
	}
	ids, err := eventIDs(events)
	if err != nil {
		return err
	}
	for _, e := range events[1:] {
		if e.t != events[0].t {
			return errors.New("opencl: WaitForEvents: events from different platforms")
		}
	}
	return events[0].t.status(fnWaitForEvents, uintptr(len(ids)), uintptr(unsafe.Pointer(&ids[0])))
}

// Status returns the command's execution state: StatusComplete,
// StatusRunning, StatusSubmitted, StatusQueued, or a negative error code.
func (e *Event) Status() (int32, error) {
	var s int32
	err := e.t.status(fnGetEventInfo, e.id, uintptr(eventCommandExecutionStatus), 4, uintptr(unsafe.Pointer(&s)), 0)
	return s, annotate(err, "%s", e.what)
}

// ProfileTimes are device timestamps in nanoseconds.
type ProfileTimes struct {
	Queued, Submitted, Started, Ended uint64
}

// Profile returns the command's timestamps. The queue must have been created
// with QueueProfiling and the command must have completed.
func (e *Event) Profile() (ProfileTimes, error) {
	var p ProfileTimes
	for _, f := range []struct {
		param uint32
		dst   *uint64
	}{
		{profilingCommandQueued, &p.Queued}, {profilingCommandSubmit, &p.Submitted},
		{profilingCommandStart, &p.Started}, {profilingCommandEnd, &p.Ended},
	} {
		if err := e.t.status(fnGetEventProfilingInfo, e.id, uintptr(f.param), 8, uintptr(unsafe.Pointer(f.dst)), 0); err != nil {
			return ProfileTimes{}, annotate(err, "%s", e.what)
		}
	}
	return p, nil
}

// Release releases the event. Releasing twice is a no-op.
func (e *Event) Release() error {
	if e.id == 0 {
		return nil
	}
	err := e.t.status(fnReleaseEvent, e.id)
	e.id = 0
	return err
}

// eventIDs returns the handles of a wait list (nil for an empty list).
func eventIDs(events []*Event) ([]uintptr, error) {
	if len(events) == 0 {
		return nil, nil
	}
	ids := make([]uintptr, len(events))
	for i, e := range events {
		if e == nil || e.id == 0 {
			return nil, fmt.Errorf("opencl: wait list entry %d is nil or released", i)
		}
		ids[i] = e.id
	}
	return ids, nil
}

// waitList returns the count and address arguments for a wait list.
func waitList(ids []uintptr) (uintptr, uintptr) {
	if len(ids) == 0 {
		return 0, 0
	}
	return uintptr(len(ids)), uintptr(unsafe.Pointer(&ids[0]))
}

// hostHold keeps host memory that a non-blocking transfer reads or writes
// pinned and reachable until the transfer's event completes.
type hostHold struct {
	event uintptr // a reference owned by the hold
	data  []byte
	pin   runtime.Pinner
}

// newHold pins data (non-empty) for a transfer about to be enqueued.
func newHold(data []byte) *hostHold {
	h := &hostHold{data: data}
	h.pin.Pin(&data[0])
	return h
}

// addHold records a hold whose event is set (the hold owns that reference),
// after dropping holds whose commands have completed.
func (q *Queue) addHold(h *hostHold) {
	q.releaseHolds(false)
	q.mu.Lock()
	q.holds = append(q.holds, h)
	q.mu.Unlock()
}

// releaseHolds drops every hold (all, after the queue has finished) or only
// those whose command has completed or failed.
func (q *Queue) releaseHolds(all bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	kept := q.holds[:0]
	for _, h := range q.holds {
		if !all {
			var s int32
			err := q.t.status(fnGetEventInfo, h.event, uintptr(eventCommandExecutionStatus), 4, uintptr(unsafe.Pointer(&s)), 0)
			if err != nil || s > StatusComplete {
				kept = append(kept, h)
				continue
			}
		}
		q.t.status(fnReleaseEvent, h.event)
		h.pin.Unpin()
		h.data = nil
	}
	clear(q.holds[len(kept):])
	q.holds = kept
}
