-- SPDX-License-Identifier: Apache-2.0
-- fc.slots: TaskManager slot accounting (core/slots.c through core/lua_slots.c).
local slots = require("fc.slots")

local MAX = { cpu_cores = 4, memory_mib = 8192, extended = { gpu = 2 } }

local function raises(pattern, fn, ...)
  local ok, err = pcall(fn, ...)
  assert.is_false(ok)
  assert.is_string(err)
  assert.truthy(err:find(pattern, 1, true), "error was: " .. tostring(err))
end

describe("slots.per_taskmanager", function()
  local per = slots.per_taskmanager

  it("takes the smallest ratio over cpu, memory and limited extended resources", function()
    assert.equal(2, per({ cpu_cores = 1, memory_mib = 2048, extended = { GPU = 1 } }, MAX))
    assert.equal(2, per({ cpu_cores = 2, memory_mib = 1024 }, MAX))          -- cpu bound
    assert.equal(2, per({ cpu_cores = 0.5, memory_mib = 4096 }, MAX))        -- memory bound
    assert.equal(2, per({ cpu_cores = 1, memory_mib = 3000 }, MAX))          -- 8192 // 3000
    assert.equal(4, per({ cpu_cores = 1, memory_mib = 2048, extended = { gpu = 0.5 } }, MAX))
  end)

  it("gives 1 for an unknown (zero or absent) cpu or memory", function()
    assert.equal(1, per({ cpu_cores = 0, memory_mib = 2048 }, MAX))
    assert.equal(1, per({ cpu_cores = 1, memory_mib = 0 }, MAX))
    assert.equal(1, per({}, MAX))
  end)

  it("gives 1 when any dimension is over its maximum", function()
    assert.equal(1, per({ cpu_cores = 5, memory_mib = 1024 }, MAX))
    assert.equal(1, per({ cpu_cores = 1, memory_mib = 9000 }, MAX))
    assert.equal(1, per({ cpu_cores = 1, memory_mib = 1024, extended = { Gpu = 3 } }, MAX))
  end)

  it("skips extended resources the maximums do not limit, zero amounts and floating memory", function()
    assert.equal(4, per({ cpu_cores = 1, memory_mib = 2048, extended = { fpga = 7 } }, MAX))
    assert.equal(4, per({ cpu_cores = 1, memory_mib = 2048, extended = { gpu = 0 } }, MAX))
    local max = { cpu_cores = 4, memory_mib = 8192, extended = { floating_managed_memory_mib = 1 } }
    assert.equal("floating_managed_memory_mib", slots.FLOATING_MEMORY)
    assert.equal(4, per({ cpu_cores = 1, memory_mib = 2048,
                          extended = { FLOATING_MANAGED_MEMORY_MIB = 100000 } }, max))
  end)

  it("floors ratios with a tolerance and caps absurd ones", function()
    assert.equal(3, per({ cpu_cores = 0.1, memory_mib = 1 }, { cpu_cores = 0.3, memory_mib = 100 }))
    assert.equal(2, per({ cpu_cores = 0.4, memory_mib = 1 }, { cpu_cores = 0.9, memory_mib = 100 }))
    assert.equal(1000000, per({ cpu_cores = 1e-12, memory_mib = 1 },
                              { cpu_cores = 4, memory_mib = 1 << 40 }))
  end)

  it("raises on bad input", function()
    raises("slots.per_taskmanager: profile: cpu_cores must be a finite number >= 0, got -1",
      per, { cpu_cores = -1, memory_mib = 1 }, MAX)
    raises("cpu_cores must be a finite number", per, { cpu_cores = 0 / 0, memory_mib = 1 }, MAX)
    raises("cpu_cores must be a finite number", per, { cpu_cores = math.huge, memory_mib = 1 }, MAX)
    raises("memory_mib must be >= 0, got -5", per, { cpu_cores = 1, memory_mib = -5 }, MAX)
    raises("memory_mib must be an integer (MiB)", per, { cpu_cores = 1, memory_mib = 1.5 }, MAX)
    raises("extended resource 'gpu' must be a finite number >= 0", per,
      { cpu_cores = 1, memory_mib = 1, extended = { gpu = -1 } }, MAX)
    raises("given twice (names ignore case)", per,
      { cpu_cores = 1, memory_mib = 1, extended = { gpu = 1, GPU = 1 } }, MAX)
    raises("profile has an unknown key 'memory'", per, { cpu_cores = 1, memory = 1 }, MAX)
    raises("slots.per_taskmanager: max: cpu_cores", per, { cpu_cores = 1 }, { cpu_cores = -4 })
    local many = {}
    for i = 1, 17 do many["r" .. i] = 1 end
    raises("more than 16 entries", per, { cpu_cores = 1, memory_mib = 1, extended = many }, MAX)
    raises("profile must be a table", per, "1 core", MAX)
  end)
end)

describe("slots accounting", function()
  local R1 = { cpu_cores = 1, memory_mib = 2048 }                       -- 4 slots per pod
  local R2 = { cpu_cores = 4, memory_mib = 8192 }                       -- 1 slot per pod
  local RG = { cpu_cores = 1, memory_mib = 2048, extended = { gpu = 1 } } -- 2 slots per pod

  local function new(opts)
    opts = opts or {}
    return slots.new {
      max = MAX,
      max_failed_attempts = opts.max_failed_attempts or 3,
      name_prefix = "wc-taskmanager-",
      max_profiles = opts.max_profiles,
      max_pods = opts.max_pods,
    }
  end

  describe("priorities", function()
    it("gives the same resource the same priority and a new one the next number", function()
      local a = new()
      assert.same({ 0, 4 }, { a:priority(R1) })
      assert.same({ 1, 1 }, { a:priority(R2) })
      assert.same({ 0, 4 }, { a:priority({ memory_mib = 2048, cpu_cores = 1.0 }) })
      assert.same({ 2, 2 }, { a:priority(RG) })
      -- names ignore case; a zero amount is no resource at all
      assert.same({ 2, 2 }, { a:priority({ cpu_cores = 1, memory_mib = 2048, extended = { GPU = 1 } }) })
      assert.same({ 0, 4 }, { a:priority({ cpu_cores = 1, memory_mib = 2048, extended = { gpu = 0 } }) })
      assert.equal(3, a:snapshot().profiles)
    end)

    it("maps priorities back to resources", function()
      local a = new()
      a:priority(R1)
      a:priority({ cpu_cores = 1, memory_mib = 2048, extended = { ["NVIDIA.com/GPU"] = 1, fpga = 0 } })
      assert.same({ cpu_cores = 1, memory_mib = 2048, extended = {} }, a:resource(0))
      assert.same({ cpu_cores = 1, memory_mib = 2048, extended = { ["nvidia.com/gpu"] = 1 } }, a:resource(1))
      assert.is_nil(a:resource(2))
      assert.is_nil(a:resource(-1))
    end)

    it("find_priority never assigns", function()
      local a = new()
      assert.is_nil(a:find_priority(R1))
      assert.equal(0, a:snapshot().profiles)
      a:priority(R2)
      assert.equal(0, a:find_priority(R2))
    end)

    it("raises past max_profiles", function()
      local a = new { max_profiles = 2 }
      a:priority(R1)
      a:priority(R2)
      raises("slots.priority: too many distinct TaskManager resources (max_profiles 2)", a.priority, a, RG)
      assert.equal(0, a:priority(R1))   -- known ones still work
    end)
  end)

  describe("start_worker / cancel_worker", function()
    it("requests a pod with slots - 1 spare, then uses the spare slots", function()
      local a = new()
      local o = a:start_worker(R1)
      assert.same({ action = "request", priority = 0, slots = 4, spare = 3, pod_id = 1,
                    pod_name = "wc-taskmanager-1" }, o)
      for spare = 2, 0, -1 do
        assert.same({ action = "use_spare", priority = 0, slots = 4, spare = spare }, a:start_worker(R1))
      end
      o = a:start_worker(R1)
      assert.equal("request", o.action)
      assert.equal(2, o.pod_id)
      assert.equal(3, o.spare)
      local s = a:snapshot()
      assert.equal(2, s.pending[0])
      assert.same({ "wc-taskmanager-1", "wc-taskmanager-2" }, s.pending_pods[0])
      assert.equal(3, s.spare[0])
      assert.equal(2, s.max_pod_id)
    end)

    it("gives slots back as spare and cancels the oldest pending pod once all its slots are spare", function()
      local a = new()
      a:start_worker(R1)                    -- pod 1, spare 3
      a:start_worker(R1)                    -- spare 2
      assert.same({ action = "spare_back", priority = 0, slots = 4, spare = 3 }, a:cancel_worker(R1))
      assert.same({ action = "cancel", priority = 0, slots = 4, spare = 0, pod_id = 1,
                    pod_name = "wc-taskmanager-1" }, a:cancel_worker(R1))
      assert.equal(0, a:snapshot().pending[0])
      assert.same({ action = "none", priority = 0, slots = 4, spare = 0 }, a:cancel_worker(R1))
    end)

    it("with one slot per pod requests a pod each time and cancels oldest first", function()
      local a = new()
      assert.equal(1, a:start_worker(R2).pod_id)
      assert.equal(2, a:start_worker(R2).pod_id)
      local o = a:start_worker(R2)
      assert.same({ "request", 3, 0 }, { o.action, o.pod_id, o.spare })
      local c = a:cancel_worker(R2)
      assert.same({ "cancel", 1, 0 }, { c.action, c.pod_id, c.spare })
      assert.equal(2, a:cancel_worker(R2).pod_id)
      assert.same({ "wc-taskmanager-3" }, a:snapshot().pending_pods[0])
    end)

    it("does nothing for a resource it never saw, and assigns it no priority", function()
      local a = new()
      assert.same({ action = "none" }, a:cancel_worker(RG))
      assert.equal(0, a:snapshot().profiles)
    end)

    it("keeps priorities apart", function()
      local a = new()
      a:start_worker(R1)
      a:start_worker(RG)
      a:start_worker(RG)
      local s = a:snapshot()
      assert.same({ [0] = 1, [1] = 1 }, s.pending)
      assert.same({ [0] = 3, [1] = 0 }, s.spare)
      assert.same({ [0] = 4, [1] = 2 }, s.slots)
      assert.same({ [0] = { "wc-taskmanager-1" }, [1] = { "wc-taskmanager-2" } }, s.pending_pods)
    end)

    it("raises past max_pods", function()
      local a = new { max_pods = 2 }
      a:start_worker(R2)
      a:start_worker(R2)
      raises("slots.start_worker: too many pods (max_pods 2)", a.start_worker, a, R2)
      assert.equal(2, a:snapshot().pending[0])
    end)
  end)

  describe("pod events", function()
    it("moves an observed pending pod to registered, once", function()
      local a = new()
      a:start_worker(R2)
      a:start_worker(R2)
      assert.equal("registered", a:pod_added("wc-taskmanager-1", 0))
      assert.equal("exists", a:pod_added("wc-taskmanager-1", 0))
      local s = a:snapshot()
      assert.equal(1, s.registered[0])
      assert.same({ "wc-taskmanager-2" }, s.pending_pods[0])
    end)

    it("calls a pod stale when it is not pending under that priority and skips its id", function()
      local a = new()
      a:start_worker(R2)                       -- pod 1, priority 0
      a:start_worker(R1)                       -- pod 2, priority 1
      assert.equal("stale", a:pod_added("wc-taskmanager-1", 1))
      a:cancel_worker(R2)
      assert.equal("stale", a:pod_added("wc-taskmanager-1", 0))   -- cancelled
      assert.equal("stale", a:pod_added("wc-taskmanager-50", 0))  -- never requested
      assert.equal(51, a:start_worker(R2).pod_id)
    end)

    it("raises on a bad name or an unknown priority", function()
      local a = new()
      a:start_worker(R2)
      raises("slots.pod_added: unknown priority 4", a.pod_added, a, "wc-taskmanager-1", 4)
      raises("slots.pod_added: unknown priority -1", a.pod_added, a, "wc-taskmanager-1", -1)
      raises("is not 'wc-taskmanager-' followed by a decimal id", a.pod_added, a, "other-1", 0)
      raises("followed by a decimal id", a.pod_added, a, "wc-taskmanager-01", 0)
      raises("followed by a decimal id", a.pod_added, a, "wc-taskmanager-", 0)
      raises("followed by a decimal id", a.pod_added, a, "wc-taskmanager-1x", 0)
      raises("priority must be an integer", a.pod_added, a, "wc-taskmanager-1", 0.5)
      raises("slots.pod_removed: pod name 'x'", a.pod_removed, a, "x")
    end)

    it("removes pending and registered pods and counts failed attempts until stopped", function()
      local a = new { max_failed_attempts = 2 }
      for _ = 1, 3 do a:start_worker(R2) end
      a:pod_added("wc-taskmanager-1", 0)
      assert.same({ removed = true, was = "registered", priority = 0, failed_attempts = 0, stopped = false },
        a:pod_removed("wc-taskmanager-1"))
      assert.same({ removed = true, was = "pending", priority = 0, failed_attempts = 1, stopped = false },
        a:pod_removed("wc-taskmanager-2", { failed = true }))
      -- an unknown pod counts nothing, as in the seed
      assert.same({ removed = false, failed_attempts = 1, stopped = false },
        a:pod_removed("wc-taskmanager-2", { failed = true }))
      a:pod_added("wc-taskmanager-3", 0)
      assert.same({ removed = true, was = "registered", priority = 0, failed_attempts = 2, stopped = true },
        a:pod_removed("wc-taskmanager-3", { failed = true }))
      local s = a:snapshot()
      assert.same({ 2, 2, true, 0, 0 }, { s.failed_attempts, s.max_failed_attempts, s.stopped,
                                         s.pending[0], s.registered[0] })
      assert.same({ action = "stopped", priority = 0, slots = 1, spare = 0 }, a:start_worker(R2))
      assert.equal("stopped", a:replace_worker(0).action)
      assert.equal(3, a:snapshot().max_pod_id)
      raises("failed must be a boolean", a.pod_removed, a, "wc-taskmanager-1", { failed = "yes" })
    end)
  end)

  describe("replace_worker", function()
    it("requests a pod for the priority without touching the spare count", function()
      local a = new()
      a:start_worker(R1)                                  -- pod 1, 4 slots, spare 3
      assert.same({ action = "request", priority = 0, slots = 4, spare = 3, pod_id = 2,
                    pod_name = "wc-taskmanager-2" }, a:replace_worker(0))
    end)

    it("applies the weak check against pending slot requests", function()
      local a = new()
      a:start_worker(R1)                                  -- 1 pending pod x 4 slots
      assert.equal("none", a:replace_worker(0, 4).action)
      assert.equal("none", a:replace_worker(0, 0).action)
      assert.equal(2, a:replace_worker(0, 5).pod_id)
      raises("slots.replace_worker: unknown priority 9", a.replace_worker, a, 9)
      raises("pending_slot_requests must be an integer >= 0", a.replace_worker, a, 0, -1)
    end)
  end)

  describe("recover", function()
    it("rebuilds the state an accounting had from its pods", function()
      local a = new()
      local names = {}
      for _ = 1, 5 do
        local o = a:start_worker(R2)
        names[#names + 1] = { o.pod_name, o.pod_id, o.priority }
      end
      local og = a:start_worker(RG)                       -- pod 6, priority 1, spare 1
      a:pod_added("wc-taskmanager-2", 0)
      a:pod_added("wc-taskmanager-4", 0)
      a:cancel_worker(R2)                                 -- cancels pod 1
      local before = a:snapshot()

      local pods = {}
      for _, n in ipairs(names) do
        if n[2] ~= 1 then
          local phase = (n[2] == 2 or n[2] == 4) and "Running" or "Pending"
          pods[#pods + 1] = { name = n[1], id = n[2], priority = n[3], phase = phase, resource = R2 }
        end
      end
      pods[#pods + 1] = { name = og.pod_name, id = og.pod_id, priority = og.priority, phase = "Pending",
                          resource = RG }
      -- reversed order: recovery sorts by id
      local reversed = {}
      for i = #pods, 1, -1 do reversed[#reversed + 1] = pods[i] end

      local b = new()
      b:recover(reversed)
      local after = b:snapshot()
      assert.same(before.pending_pods, after.pending_pods)
      assert.same({ [0] = 2, [1] = 1 }, after.pending)
      assert.same(before.registered, after.registered)
      assert.same(before.slots, after.slots)
      assert.same({ before.max_pod_id, before.next_priority, before.profiles },
                  { after.max_pod_id, after.next_priority, after.profiles })
      -- spare slots are not in pods: they start at 0
      assert.same({ [0] = 0, [1] = 1 }, before.spare)
      assert.same({ [0] = 0, [1] = 0 }, after.spare)
      -- the same resources keep their priorities; the next pod id follows on
      assert.equal(1, b:priority(RG))
      local o = b:start_worker(R2)
      assert.same({ "request", 0, 7 }, { o.action, o.priority, o.pod_id })
      assert.equal("registered", b:pod_added("wc-taskmanager-3", 0))
    end)

    it("reserves priorities of pods without a resource and counts ids of finished pods", function()
      local a = new()
      a:recover {
        { name = "wc-taskmanager-9", id = 9, priority = 4, phase = "Running" },
        { id = 12, priority = 4, phase = "Failed" },
        { id = 3, priority = 1, phase = "Unknown" },
        { id = 10, priority = 4, phase = "Succeeded" },
      }
      local s = a:snapshot()
      assert.same({ 12, 5, 2 }, { s.max_pod_id, s.next_priority, s.profiles })
      assert.same({ [1] = 1, [4] = 1 }, s.registered)
      assert.same({ [1] = 0, [4] = 0 }, s.pending)
      assert.is_nil(a:resource(4))
      assert.equal("none", a:replace_worker(4).action)     -- no resource known for it
      local p = a:priority(R1)
      assert.equal(5, p)
      assert.same({ "request", 13 }, { a:start_worker(R1).action, a:snapshot().max_pod_id })
      assert.equal("exists", a:pod_added("wc-taskmanager-3", 1))
    end)

    it("raises on bad records and leaves the accounting new", function()
      local a = new()
      raises("slots.recover: pods[2]: pod id 5 given twice", a.recover, a, {
        { id = 5, priority = 0, phase = "Running" }, { id = 5, priority = 1, phase = "Pending" } })
      raises("slots.recover: pods[1]: name 'wc-taskmanager-6' does not match id 5", a.recover, a, {
        { name = "wc-taskmanager-6", id = 5, priority = 0, phase = "Running" } })
      raises("pods[1].phase must be Pending, Running", a.recover, a, {
        { id = 5, priority = 0, phase = "running" } })
      raises("pods[1].priority must be an integer", a.recover, a, { { id = 5, priority = -2, phase = "Running" } })
      raises("pods[1]: id must be 0..", a.recover, a, { { id = -5, priority = 0, phase = "Running" } })
      raises("priority 0 has two different resources", a.recover, a, {
        { id = 1, priority = 0, phase = "Running", resource = R1 },
        { id = 2, priority = 0, phase = "Running", resource = R2 } })
      raises("resource already has priority 0, not 1", a.recover, a, {
        { id = 1, priority = 0, phase = "Running", resource = R1 },
        { id = 2, priority = 1, phase = "Running", resource = R1 } })
      raises("slots.recover: resource: cpu_cores", a.recover, a, {
        { id = 1, priority = 0, phase = "Running", resource = { cpu_cores = -1 } } })
      local s = a:snapshot()
      assert.same({ 0, 0, 0 }, { s.profiles, s.max_pod_id, s.next_priority })
      a:recover { { id = 5, priority = 0, phase = "Running" } }
      raises("slots.recover: the accounting is not new", a.recover, a, {})
    end)

    it("raises past max_pods", function()
      local a = new { max_pods = 1 }
      raises("too many pods (max_pods 1)", a.recover, a, {
        { id = 1, priority = 0, phase = "Running" }, { id = 2, priority = 0, phase = "Pending" } })
    end)
  end)

  describe("new", function()
    it("raises on a bad config", function()
      raises("slots.new: max (per-TaskManager maximums) is required", slots.new, {})
      raises("slots.new: unknown option 'max_failed'", slots.new, { max = MAX, max_failed = 1 })
      raises("slots.new: max_failed_attempts must be >= 1", slots.new, { max = MAX, max_failed_attempts = 0 })
      raises("slots.new: name_prefix must be at most 200 of [a-z0-9.-]", slots.new,
        { max = MAX, name_prefix = "Bad_" })
      raises("slots.new: max: memory_mib must be >= 0", slots.new, { max = { memory_mib = -1 } })
      raises("slots.new: max_pods must be 1..1048576", slots.new, { max = MAX, max_pods = 2000000 })
    end)

    it("defaults the prefix and the failed-attempt maximum", function()
      local a = slots.new { max = MAX }
      assert.equal("taskmanager-1", a:start_worker(R1).pod_name)
      assert.equal(100, a:snapshot().max_failed_attempts)
      assert.equal("taskmanager-42", a:pod_name(42))
    end)

    it("frees the accounting when a <close> variable goes out of scope", function()
      local kept
      do
        local a <close> = slots.new { max = MAX }
        a:start_worker(R1)
        kept = a
      end
      raises("slots: accounting already freed", kept.snapshot, kept)
      assert.equal("fc.slots.acct", getmetatable(kept))
    end)
  end)
end)

-- The controller's pass (slots.h, "The controller's pass"): what fc.taskmanagers calls on every
-- reconcile of a Native cluster.
describe("fc.slots: the controller's pass", function()
  local P = { cpu_cores = 1, memory_mib = 2048 } -- 2 slots per TaskManager under PMAX
  local PMAX = { cpu_cores = 2, memory_mib = 4096 }
  local function acct(opts)
    local o = { max = PMAX, name_prefix = "wc-taskmanager-", max_failed_attempts = 3,
      registration_timeout_seconds = 60, start_backoff_seconds = 5, start_backoff_max_seconds = 20 }
    for k, v in pairs(opts or {}) do o[k] = v end
    return slots.new(o)
  end
  local function names(actions, kind)
    local out = {}
    for _, a in ipairs(actions) do
      if a.action == kind then out[#out + 1] = a.pod_name end
    end
    return out
  end
  -- one pass listing `pods` ({name, priority, phase, created}) with an optional JobManager answer
  local function pass(a, now, pods, registered, answered_at)
    a:begin_pass(now)
    local verdicts = {}
    for _, p in ipairs(pods) do verdicts[p[1]] = a:observe_pod(p[1], p[2], p[3] or "Running", p[4] or now) end
    for _, n in ipairs(registered or {}) do a:tm_registered(n) end
    return verdicts, a:sweep(answered_at)
  end

  it("requests ceil(demand / slots) pods and keeps the odd slot spare", function()
    local a = acct()
    a:begin_pass(100)
    local actions, final = a:demand(P, 7)
    assert.same({ "wc-taskmanager-1", "wc-taskmanager-2", "wc-taskmanager-3", "wc-taskmanager-4" },
      names(actions, "request"))
    assert.same({ action = "none", priority = 0, slots = 2, spare = 1 }, final)
    assert.equal(0, actions[1].priority)
  end)

  it("cancels pending pods first, oldest first, then registered ones newest first", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 8)
    pass(a, 101, { { "wc-taskmanager-1", 0 }, { "wc-taskmanager-2", 0 }, { "wc-taskmanager-3", 0 },
      { "wc-taskmanager-4", 0 } }, { "wc-taskmanager-1", "wc-taskmanager-4" }, 101)
    local actions = a:demand(P, 3)
    assert.same({ "wc-taskmanager-2", "wc-taskmanager-3" }, names(actions, "cancel"))
    assert.is_false(actions[1].was_registered)
    actions = a:demand(P, 0)
    assert.same({ "wc-taskmanager-4", "wc-taskmanager-1" }, names(actions, "cancel"))
    assert.is_true(actions[1].was_registered)
  end)

  it("gives verdicts on listed pods: keep, stale, malformed, terminated", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 4)
    local v, events = pass(a, 101, {
      { "wc-taskmanager-1", 0 }, { "wc-taskmanager-2", 0, "Failed" },
      { "wc-taskmanager-7", 0 },          -- never requested (a previous controller's, cancelled)
      { "wc-taskmanager-1x", 0 },         -- not prefix + id
      { "wc-taskmanager-8", nil },        -- priority label missing or not a number
      { "wc-taskmanager-1", 5 } })        -- a priority nobody gave it: listed again, stale
    assert.equal("terminated", v["wc-taskmanager-2"])
    assert.equal("stale", v["wc-taskmanager-7"])
    assert.equal("malformed", v["wc-taskmanager-1x"])
    assert.equal("malformed", v["wc-taskmanager-8"])
    assert.equal("stale", v["wc-taskmanager-1"])
    assert.same({}, events)
    local snap = a:snapshot()
    assert.equal(1, snap.failed_attempts)
    assert.equal(8, snap.max_pod_id)      -- ids of stale and malformed pods are never reused
    local actions = a:demand(P, 4)
    assert.same({ "wc-taskmanager-9" }, names(actions, "request"))
  end)

  it("replaces a pod that disappeared and counts it as failed", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 4)
    pass(a, 101, { { "wc-taskmanager-1", 0 }, { "wc-taskmanager-2", 0 } })
    local _, events = pass(a, 102, { { "wc-taskmanager-2", 0 } })
    assert.same({ { kind = "gone", pod_name = "wc-taskmanager-1", priority = 0, failed_attempts = 1,
      stopped = false } }, events)
    assert.same({ "wc-taskmanager-3" }, names((a:demand(P, 4)), "request"))
  end)

  it("times out a pod not registered by creation + timeout, only against a JobManager answer", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 4)
    local pods = { { "wc-taskmanager-1", 0, "Running", 100 }, { "wc-taskmanager-2", 0, "Running", 130 } }
    local _, events = pass(a, 170, pods)
    assert.same({}, events)                         -- no answer: nobody is timed out
    _, events = pass(a, 171, pods, {}, 159)
    assert.same({}, events)                         -- the answer predates the deadline (160)
    _, events = pass(a, 172, pods, { "wc-taskmanager-2" }, 171)
    assert.equal(1, #events)
    assert.same({ "timeout", "wc-taskmanager-1", 1 }, { events[1].kind, events[1].pod_name, events[1].failed_attempts })
    _, events = pass(a, 400, { pods[2] }, {}, 399)  -- registered: no deadline any more
    assert.same({}, events)
  end)

  it("cools down after a failed start, doubling to the maximum, and resets once a pod is seen", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 2)                                        -- pod 1: its create is refused
    local _, events = pass(a, 101, {})
    assert.same({ { kind = "start_failed", pod_name = "wc-taskmanager-1", priority = 0, failed_attempts = 0,
      stopped = false, wait_until = 106 } }, events)
    local actions, final = a:demand(P, 2)
    assert.same({}, actions)
    assert.same({ "wait", 106 }, { final.action, final.wait_until })
    local waits = {}
    for i, now in ipairs({ 106, 117, 138, 159 }) do
      a:begin_pass(now)
      a:demand(P, 2)                                      -- pod 1 + i, refused again
      _, events = pass(a, now + 1, {})
      waits[i] = events[1].wait_until - (now + 1)
    end
    assert.same({ 10, 20, 20, 20 }, waits)
    assert.equal(5, a:snapshot().start_failures)
    a:begin_pass(200)
    a:demand(P, 2)
    pass(a, 201, { { "wc-taskmanager-6", 0 } })
    local snap = a:snapshot()
    assert.same({ 0, 0 }, { snap.start_failures, snap.backoff_seconds })
    assert.equal(0, snap.failed_attempts)                 -- refused creates are not failed pods
  end)

  it("stops starting pods at max_failed_attempts and says so", function()
    local a = acct({ max_failed_attempts = 2 })
    a:begin_pass(100)
    a:demand(P, 2)
    local _, events = pass(a, 101, { { "wc-taskmanager-1", 0, "Failed" } })
    assert.same({}, events)
    a:demand(P, 2)
    _, events = pass(a, 102, { { "wc-taskmanager-2", 0, "Succeeded" } })
    assert.same({}, events)
    local actions, final = a:demand(P, 2)
    assert.same({}, actions)
    assert.equal("stopped", final.action)
    assert.is_true(a:snapshot().stopped)
  end)

  it("moves to a new priority when the profile changes: the old pods go", function()
    local a = acct()
    a:begin_pass(100)
    a:demand(P, 2)
    pass(a, 101, { { "wc-taskmanager-1", 0 } })
    local actions = a:demand({ cpu_cores = 2, memory_mib = 4096 }, 2)
    assert.same({ "wc-taskmanager-1" }, names(actions, "cancel"))
    assert.same({ "wc-taskmanager-2", "wc-taskmanager-3" }, names(actions, "request"))
    assert.equal(1, actions[2].priority)
  end)

  it("recovers after a restart: creates nothing that exists, counts pods that ended, keeps priorities", function()
    local a = acct()
    a:begin_pass(1000)
    a:recover {
      { name = "wc-taskmanager-3", id = 3, priority = 4, phase = "Pending", created = 900, resource = P },
      { name = "wc-taskmanager-5", id = 5, priority = 4, phase = "Pending", created = 990, resource = P },
      { name = "wc-taskmanager-4", id = 4, priority = 4, phase = "Failed", created = 950, resource = P },
    }
    local snap = a:snapshot()
    assert.same({ 1, 5, 5 }, { snap.failed_attempts, snap.max_pod_id, snap.next_priority })
    local actions, final = a:demand(P, 4)
    assert.same({}, actions)                              -- priority 4 is P's: the pods serve it
    assert.same({ "none", 4 }, { final.action, final.priority })
    -- pending (as the controller recovers every live pod) until the JobManager lists them;
    -- deadline = created + 60
    local _, events = pass(a, 1001, { { "wc-taskmanager-3", 4, "Running", 900 },
      { "wc-taskmanager-5", 4, "Running", 990 } }, { "wc-taskmanager-5" }, 1000)
    assert.same({ "timeout", "wc-taskmanager-3" }, { events[1].kind, events[1].pod_name })
    assert.same({ "wc-taskmanager-6" }, names((a:demand(P, 4)), "request"))
  end)

  it("recovers from no pods at all (a new cluster)", function()
    local a = acct()
    a:begin_pass(10)
    a:recover {}
    assert.same({ 0, 0 }, { a:snapshot().max_pod_id, a:snapshot().failed_attempts })
    assert.equal(2, #(a:demand(P, 3)))
  end)

  it("carries failed attempts over with add_failed", function()
    local a = acct({ max_failed_attempts = 3 })
    a:add_failed(2)
    assert.same({ 2, false }, { a:snapshot().failed_attempts, a:snapshot().stopped })
    a:add_failed(1)
    assert.is_true(a:snapshot().stopped)
    a:begin_pass(1)
    assert.equal("stopped", select(2, a:demand(P, 1)).action)
    raises("slots.add_failed: n must be an integer", a.add_failed, a, -1)
  end)

  it("raises slots.<function>: <reason> on bad input", function()
    local a = acct()
    raises("slots.demand: demand must be an integer >= 0", a.demand, a, P, -1)
    raises("slots.demand: resource must be a table", a.demand, a, nil, 1)
    raises("slots.observe_pod: phase must be", a.observe_pod, a, "wc-taskmanager-1", 0, "Gone")
    raises("slots.observe_pod: priority must be an integer or nil", a.observe_pod, a, "wc-taskmanager-1", "0")
    raises("slots.begin_pass: now must be a number", a.begin_pass, a, "now")
    raises("slots.sweep: answered_at must be 0..1e12", a.sweep, a, -3)
    raises("slots.new: registration_timeout_seconds must be a number of seconds", slots.new,
      { max = PMAX, registration_timeout_seconds = -1 })
    raises("slots.recover: pods[1].created must be a number", a.recover, a,
      { { id = 1, priority = 0, phase = "Running", created = "yesterday" } })
  end)
end)
