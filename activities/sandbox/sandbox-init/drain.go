package main

import (
	"os"
	"sync"
	"time"
)

// outputDrain is how long a contained server relays output of a process that has exited (a
// process that left its group may hold the pipes) before it ends them.
const outputDrain = time.Second

// cutOffHeldOutput ends the output pipes of a contained server's process that has exited once a
// process that left its group holds them open and silent: only pipes that stayed empty a whole
// interval, each relay waiting in its read, are cut. Output that still flows, or waits for the
// worker, is the process's own.
func (c *child) cutOffHeldOutput(relays *sync.WaitGroup, stdout, stderr *os.File) {
	<-c.exited
	relayed := make(chan struct{})
	go func() {
		relays.Wait()
		close(relayed)
	}()
	last := int64(-1)
	for {
		select {
		case <-relayed:
			return
		case <-time.After(outputDrain):
		}
		idle := true
		for stream := range c.reading {
			idle = idle && (c.ended[stream].Load() || c.reading[stream].Load())
		}
		if n := c.relayed.Load(); !idle || n != last {
			last = n
			continue
		}
		stdout.Close()
		stderr.Close()
		return
	}
}
