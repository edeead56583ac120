-- SPDX-License-Identifier: Apache-2.0
-- Specs of policies/status.lua: the fixtures in policies/testdata/status/<case>/ (every case directory;
-- input.yaml holds `hook` and its `input`; expected.yaml is matched against the output as
-- support.fixtures' `mismatch` says: every key given must be equal, lists must have the same
-- length, `{}` means "empty or absent", `~` means "absent"; FC_UPDATE_FIXTURES=1 rewrites it),
-- run on the policy in the production sandbox (support.fixtures), plus unit tests of the rules.
local fx = require("support.fixtures")

describe("policies/status.lua", function()
  local status = fx.sandboxed("status")

  describe("fixtures", function()
    local all = fx.cases("status")
    it("has the cases", function()
      fx.assert_cases(all, {
        "cancelled-stopped", "components-deleted", "components-not-ready", "components-ready", "creating",
        "job-failed-stalled", "job-pending", "job-restart-pending", "job-succeeded-kept", "partially-stopped",
        "reconciling", "running", "session-no-job", "stopped", "stopping", "template-held", "template-held-adopted",
        "update-savepoint", "updating-revision",
      })
    end)
    for _, case in ipairs(all) do
      it(case, function()
        assert.is_nil(fx.hook_case("status", status, case))
      end)
    end
  end)

  describe("statefulset_state", function()
    local function sts(replicas, ready, gen, seen, cur, upd)
      return { metadata = { generation = gen }, spec = { replicas = replicas },
        status = { readyReplicas = ready, observedGeneration = seen, currentRevision = cur, updateRevision = upd } }
    end
    it("is Ready when readyReplicas == replicas and observedGeneration is current", function()
      assert.equal("Ready", status.statefulset_state(sts(2, 2, 4, 4)))
    end)
    it("is NotReady with fewer ready replicas, readyReplicas omitted meaning 0", function()
      assert.equal("NotReady", status.statefulset_state(sts(2, 1, 1, 1)))
      assert.equal("NotReady", status.statefulset_state(sts(1, nil, 1, 1)))
    end)
    it("defaults replicas to 1", function()
      assert.equal("Ready", status.statefulset_state(sts(nil, 1, 1, 1)))
    end)
    it("is Updating while the controller lags the generation or rolls out a revision", function()
      assert.equal("Updating", status.statefulset_state(sts(1, 1, 5, 4)))
      assert.equal("Updating", status.statefulset_state(sts(1, 1, 5, 5, "a-1", "a-2")))
    end)
    it("is NotReady before the StatefulSet controller has seen it at all", function()
      assert.equal("NotReady", status.statefulset_state(sts(1, nil, 1, nil)))
    end)
  end)

  describe("service_state", function()
    it("is Ready for a ClusterIP Service once it exists", function()
      assert.equal("Ready", status.service_state({ spec = { type = "ClusterIP" } }))
    end)
    it("waits for a LoadBalancer ingress address", function()
      assert.equal("NotReady", status.service_state({ spec = { type = "LoadBalancer" },
        status = { loadBalancer = {} } }))
      assert.equal("Ready", status.service_state({ spec = { type = "LoadBalancer" },
        status = { loadBalancer = { ingress = { { hostname = "lb.example.com" } } } } }))
    end)
  end)

  describe("compute", function()
    local function comps(tm)
      return {
        configMap = { name = "c-configmap", state = "Ready" },
        jobManagerStatefulSet = { name = "c-jobmanager", state = "Ready" },
        jobManagerService = { name = "c-jobmanager", state = "Ready" },
        taskManagerStatefulSet = { name = "c-taskmanager", state = tm },
      }
    end
    local function input(old_state, tm)
      return { cluster = { metadata = { name = "c" }, spec = {}, status = { state = old_state } },
        components = comps(tm), cleanup = "", updating = false, revision = { current = "c-1", next = "c-1" }, now = 5 }
    end
    it("stays Creating until the first time all are Ready", function()
      assert.equal("Creating", status.compute(input(nil, "NotReady")).state)
      assert.equal("Creating", status.compute(input("Creating", "NotReady")).state)
      assert.equal("Running", status.compute(input("Creating", "Ready")).state)
    end)
    it("goes Reconciling -> Running when the component recovers", function()
      assert.equal("Reconciling", status.compute(input("Running", "NotReady")).state)
      assert.equal("Running", status.compute(input("Reconciling", "Ready")).state)
    end)
    it("shows a StatefulSet rollout as Updating once the cluster has run, not while Creating", function()
      assert.equal("Updating", status.compute(input("Running", "Updating")).state)
      assert.equal("Creating", status.compute(input("Creating", "Updating")).state)
    end)
    it("puts the job into components and passes savepoint and control through", function()
      local i = input("Running", "Ready")
      i.job = { name = "c-job-submitter", state = "Running", id = "ab" }
      i.savepoint = { state = "Succeeded" }
      i.control = { name = "savepoint", state = "Succeeded" }
      local out = status.compute(i)
      assert.equal("ab", out.components.job.id)
      assert.equal("Succeeded", out.savepoint.state)
      assert.equal("savepoint", out.control.name)
      assert.same({ "Ready", "Reconciling", "Stalled", "JobRunning" }, { out.conditions[1].type,
        out.conditions[2].type, out.conditions[3].type, out.conditions[4].type })
      assert.same({ "True", "True", "False", "False" }, { out.conditions[1].status, out.conditions[4].status,
        out.conditions[2].status, out.conditions[3].status })
    end)
  end)

  describe("kstatus conditions", function()
    local function cond(out, t)
      for _, c in ipairs(out.conditions) do
        if c.type == t then return c.status .. " " .. c.reason end
      end
    end
    local function job_input(job_state, cleanup, comp_state, extra)
      local comps = {}
      for _, k in ipairs({ "configMap", "jobManagerStatefulSet", "jobManagerService", "taskManagerStatefulSet" }) do
        comps[k] = { name = k, state = comp_state }
      end
      local i = { cluster = { metadata = { name = "c" }, spec = { job = {} }, status = { state = "Running" } },
        components = comps, job = { name = "c-job-submitter", id = "ab", state = job_state }, cleanup = cleanup,
        updating = false, revision = { current = "c-1", next = "c-1" }, held = {}, now = 5 }
      for k, v in pairs(extra or {}) do i[k] = v end
      return i
    end
    it("a job cluster is Ready once its job runs, not when only its components are", function()
      assert.equal("False JobPending", cond(status.compute(job_input("Pending", "", "Ready")), "Ready"))
      assert.equal("True SubmittingJob", cond(status.compute(job_input("Pending", "", "Ready")), "Reconciling"))
      assert.equal("True Running", cond(status.compute(job_input("Running", "", "Ready")), "Ready"))
      assert.equal("False Reconciled", cond(status.compute(job_input("Running", "", "Ready")), "Reconciling"))
    end)
    it("a finished job is Ready only once every component its cleanup removes is gone", function()
      local i = job_input("Succeeded", "DeleteTaskManager", "Ready")
      i.components.taskManagerStatefulSet.state = "Deleted"
      local out = status.compute(i)
      assert.equal("PartiallyStopped", out.state)
      assert.equal("True JobSucceeded", cond(out, "Ready"))
      i = job_input("Succeeded", "DeleteCluster", "Deleted")
      i.components.jobManagerIngress = { name = "c-jobmanager", state = "NotReady" }
      out = status.compute(i)
      assert.equal("Stopped", out.state)
      assert.equal("False Stopped", cond(out, "Ready"))
      assert.equal("True CleaningUp", cond(out, "Reconciling"))
    end)
    it("a failed job is Stalled only when it is not restarted, and stays Stalled while it is cleaned up", function()
      local i = job_input("Lost", "", "Ready")
      assert.equal("True JobLost", cond(status.compute(i), "Stalled"))
      i.job.nextRestartTime = "2026-01-01T00:00:00Z"
      assert.equal("False NotStalled", cond(status.compute(i), "Stalled"))
      i = job_input("Failed", "DeleteTaskManager", "Ready")
      local out = status.compute(i)
      assert.same({ "Stopping", "True JobFailed", "False Stalled" }, { out.state, cond(out, "Stalled"),
        cond(out, "Reconciling") })
    end)
    it("a cancel requested for a running job is work in progress", function()
      local i = job_input("Running", "", "Ready")
      i.control = { name = "job-cancel", state = "Progressing" }
      assert.equal("True Cancelling", cond(status.compute(i), "Reconciling"))
      i = job_input("Running", "", "Ready")
      i.cluster.spec.job.cancelRequested = true
      assert.equal("True Cancelling", cond(status.compute(i), "Reconciling"))
    end)
    it("a session cluster: Ready while Running; Reconciling while Creating, Updating or Reconciling", function()
      local i = job_input(nil, "", "NotReady")
      i.job = nil
      i.cluster.status.state = "Creating"
      local out = status.compute(i)
      assert.same({ "Creating", "False Creating", "True Creating", "False NotStalled" },
        { out.state, cond(out, "Ready"), cond(out, "Reconciling"), cond(out, "Stalled") })
      assert.is_nil(cond(out, "JobRunning"))
      i.cluster.status.state = "Running"
      assert.equal("True Recovering", cond(status.compute(i), "Reconciling"))
      i.updating = true
      assert.equal("True Updating", cond(status.compute(i), "Reconciling"))
    end)
  end)
end)
