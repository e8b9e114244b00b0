package vk

import "fmt"

// QueryPool is a VkQueryPool.
type QueryPool uint64

// NewTimestampPool creates a pool of n timestamp queries
// (VK_QUERY_TYPE_TIMESTAMP).
func (d *Device) NewTimestampPool(n int) (QueryPool, error) {
	var ps pins
	defer ps.done()
	ci := queryPoolCreateInfo{sType: stQueryPoolCreateInfo, queryType: queryTypeTimestamp, queryCount: uint32(n)}
	var p QueryPool
	r := call(d.fn.createQueryPool, uintptr(d.h), ptr(&ps, &ci), 0, ptr(&ps, &p))
	return p, check("vkCreateQueryPool", r, fmt.Sprintf("%d timestamps", n))
}

// DestroyQueryPool destroys p (a zero handle is ignored).
func (d *Device) DestroyQueryPool(p QueryPool) {
	if p != 0 {
		call(d.fn.destroyQueryPool, uintptr(d.h), uintptr(p), 0)
	}
}

// Timestamps waits for queries first to first+len(dst)-1 of p and copies
// their 64-bit values into dst (vkGetQueryPoolResults with
// VK_QUERY_RESULT_64_BIT and VK_QUERY_RESULT_WAIT_BIT).
func (d *Device) Timestamps(p QueryPool, first int, dst []uint64) error {
	if len(dst) == 0 {
		return nil
	}
	var ps pins
	defer ps.done()
	r := call(d.fn.getQueryPoolResults, uintptr(d.h), uintptr(p), uintptr(first), uintptr(len(dst)),
		uintptr(8*len(dst)), slice(&ps, dst), 8, uintptr(queryResult64|queryResultWait))
	return check("vkGetQueryPoolResults", r, fmt.Sprintf("%d timestamps", len(dst)))
}

// ResetQueries records resetting queries first to first+n-1 of p.
func (c *CommandBuffer) ResetQueries(p QueryPool, first, n int) {
	call(c.d.fn.cmdResetQueryPool, uintptr(c.H), uintptr(p), uintptr(first), uintptr(n))
}

// WriteTimestamp records writing query q of p once the commands before it
// have completed stage (a Stage… bit).
func (c *CommandBuffer) WriteTimestamp(stage uint32, p QueryPool, q int) {
	call(c.d.fn.cmdWriteTimestamp, uintptr(c.H), uintptr(stage), uintptr(p), uintptr(q))
}

// TimestampBits returns the valid bits of the timestamps of the device's
// queue (its family's timestampValidBits, or 64 when the family reports
// none but the device has timestampComputeAndGraphics), 0 when the queue
// cannot write timestamps; Limits.TimestampPeriod converts them to
// nanoseconds.
func (d *Device) TimestampBits() int {
	if q := d.QueueFamily; q >= 0 && q < len(d.pd.QueueFamilies) && d.pd.QueueFamilies[q].TimestampValidBits > 0 {
		return int(min(d.pd.QueueFamilies[q].TimestampValidBits, 64))
	}
	if bool32(d.pd.Limits.TimestampComputeAndGraphics) {
		return 64
	}
	return 0
}
