package nspawn

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// loopDevices makes sure the kernel has loop devices 0 to n-1 (LOOP_CTL_ADD; one that exists is
// left alone) and returns the device nodes a machine is given: /dev/loop-control and
// /dev/loop0 to /dev/loop<n-1>. devtmpfs creates the nodes of devices the kernel adds.
func loopDevices(n int) ([]string, error) {
	control, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer control.Close()
	devices := []string{"/dev/loop-control"}
	for i := range n {
		if err := addLoop(control, i); err != nil {
			return nil, err
		}
		devices = append(devices, fmt.Sprintf("/dev/loop%d", i))
	}
	return devices, nil
}

// addLoop adds loop device i unless it exists.
func addLoop(control *os.File, i int) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, control.Fd(), unix.LOOP_CTL_ADD, uintptr(i))
	if errno != 0 && !errors.Is(errno, unix.EEXIST) {
		return fmt.Errorf("adding /dev/loop%d: %w", i, errno)
	}
	if _, err := os.Stat(fmt.Sprintf("/dev/loop%d", i)); err != nil {
		return fmt.Errorf("loop device %d has no node in /dev: %w", i, err)
	}
	return nil
}
