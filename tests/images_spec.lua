-- SPDX-License-Identifier: Apache-2.0
-- The real node's images built here (tests/env/mkimage.sh, tests/env/image/), without root,
-- containerd or Java: the archive mkimage.sh writes, the configuration lookup of the Flink image
-- and how its entrypoint maps `args: [jobmanager]` / `[taskmanager]` to a JVM command line (a
-- stub `java` prints what it is given), and what images.sh reads from the Dockerfile.
-- tests/env/images_check.sh checks the built images themselves (as root).
local cjson = require("cjson")
local fx = require("support.fixtures")

local ENV = fx.path("tests/env")
local quote = fx.quote

-- sh(cmd): stdout of `cmd` (bash) and its exit status
local function sh(cmd)
  local p = assert(io.popen("bash -c " .. quote(cmd .. "\necho \"exit=$?\"")))
  local out = p:read("a")
  p:close()
  local body, code = out:match("^(.-)exit=(%d+)\n$")
  return body, tonumber(code)
end

local function has_jq()
  local _, code = sh("command -v jq >/dev/null")
  return code == 0
end

describe("tests/env/mkimage.sh", function()
  local dir
  before_each(function() dir = fx.tmpdir() end)
  after_each(function() os.execute("rm -rf " .. quote(dir)) end)

  it("writes a docker-save archive: tags, config named by its digest, layer by its diff_id", function()
    if not has_jq() then pending("jq not installed") return end
    local out, code = sh(table.concat({
      "set -e; cd " .. quote(dir),
      "mkdir -p rootfs/bin x && echo hi >rootfs/bin/hello",
      quote(ENV .. "/mkimage.sh") .. " --user 65532:65532 --env A=b rootfs"
        .. " docker.io/library/t:1.2.3,docker.io/library/t:1.2 img.tar '[\"/bin/hello\"]' '[\"--help\"]'",
      "tar -xf img.tar -C x",
      "cat x/manifest.json; echo",
      "cfg=$(jq -r '.[0].Config' x/manifest.json); cat x/$cfg; echo",
      "echo cfgsum=$(sha256sum <x/$cfg | cut -d' ' -f1)",
      "echo layersum=$(sha256sum <x/$(jq -r '.[0].Layers[0]' x/manifest.json) | cut -d' ' -f1)",
      "echo files=$(tar -tf x/$(jq -r '.[0].Layers[0]' x/manifest.json) | sort | paste -sd' ')",
    }, "\n"))
    assert.are.equal(0, code, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    local manifest = cjson.decode(lines[1])
    local config = cjson.decode(lines[2])
    local cfgsum = out:match("cfgsum=(%x+)")
    local layersum = out:match("layersum=(%x+)")
    assert.are.same({ "docker.io/library/t:1.2.3", "docker.io/library/t:1.2" }, manifest[1].RepoTags)
    assert.are.equal(cfgsum .. ".json", manifest[1].Config)
    assert.are.same({ layersum .. "/layer.tar" }, manifest[1].Layers)
    assert.are.same({ "sha256:" .. layersum }, config.rootfs.diff_ids)
    assert.are.same({ "/bin/hello" }, config.config.Entrypoint)
    assert.are.same({ "--help" }, config.config.Cmd)
    assert.are.equal("65532:65532", config.config.User)
    assert.are.equal("A=b", config.config.Env[2])
    assert.truthy(config.config.Env[1]:match("^PATH="))
    assert.are.equal("linux", config.os)
    assert.truthy(out:match("files=%./ %./bin/ %./bin/hello"), out)
  end)

  it("packs the same root file system into the same layer digest", function()
    if not has_jq() then pending("jq not installed") return end
    local out, code = sh(table.concat({
      "set -e; cd " .. quote(dir),
      "mkdir -p rootfs/etc && echo a >rootfs/etc/a && echo b >rootfs/etc/b",
      quote(ENV .. "/mkimage.sh") .. " rootfs localhost/t:1 1.tar",
      "sleep 1; touch -a rootfs/etc/a",
      quote(ENV .. "/mkimage.sh") .. " rootfs localhost/t:1 2.tar",
      "cmp 1.tar 2.tar && echo same",
    }, "\n"))
    assert.are.equal(0, code, out)
    assert.truthy(out:match("same"))
  end)

  it("refuses an ENTRYPOINT that is not a JSON array of strings (exit 2)", function()
    if not has_jq() then pending("jq not installed") return end
    local out, code = sh("cd " .. quote(dir) .. " && mkdir r && " .. quote(ENV .. "/mkimage.sh")
      .. " r localhost/t:1 t.tar '\"/bin/sh\"' 2>&1")
    assert.are.equal(2, code, out)
    assert.truthy(out:match("not a JSON array of strings"))
  end)
end)

describe("the Flink image's entrypoint (tests/env/image/flink/)", function()
  local home
  -- a FLINK_HOME like the image's, with a stub java: BashJavaUtils answers with fixed memory
  -- flags, any other main class prints its arguments one per line
  before_each(function()
    home = fx.tmpdir()
    local src = ENV .. "/image/flink"
    assert(os.execute(table.concat({
      "set -e; cd " .. quote(home),
      "mkdir -p bin lib conf image stub",
      "cp " .. quote(src .. "/flink-env.sh") .. " bin/",
      "cp " .. quote(src .. "/log4j-cli.properties") .. " image/",
      "touch lib/b.jar lib/a.jar image/log4j-console.properties",
      "cat >stub/java <<'EOF'\n#!/bin/sh\ncase \"$*\" in\n"
        .. "  *BashJavaUtils*) echo 'INFO noise'; echo 'BASH_JAVA_UTILS_EXEC_RESULT:-Xmx100m -Xms100m';"
        .. " echo 'BASH_JAVA_UTILS_EXEC_RESULT:-Dx.size=1b -Dy.size=2b' ;;\n"
        .. "  *) for a in \"$@\"; do echo \"$a\"; done ;;\nesac\nEOF",
      "chmod +x stub/java",
    }, "\n")))
  end)
  after_each(function() os.execute("rm -rf " .. quote(home)) end)

  -- run(args, conf): the entrypoint's argv lines (the stub's output) and its stderr message
  local function run(args, env)
    local out, code = sh("cd " .. quote(home) .. " && env " .. (env or "") .. " FLINK_HOME=" .. quote(home)
      .. " PATH=" .. quote(home .. "/stub") .. ":$PATH bash " .. quote(ENV .. "/image/flink/docker-entrypoint.sh")
      .. " " .. args .. " 2>&1")
    local argv = {}
    for l in out:gmatch("[^\n]+") do argv[#argv + 1] = l end
    return argv, code, out
  end
  local function index(list, v)
    for i, x in ipairs(list) do if x == v then return i end end
  end
  local function conf(text) fx.write(home .. "/conf/flink-conf.yaml", text) end

  it("jobmanager: session entrypoint, memory flags, bind addresses the configuration lacks", function()
    conf("jobmanager.rpc.address: wordcount-jobmanager\nrest.port: 8081\n")
    local argv, code, out = run("jobmanager")
    assert.are.equal(0, code, out)
    local main = index(argv, "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint")
    assert.truthy(main, out)
    assert.truthy(index(argv, "-Xmx100m") < main)
    assert.truthy(index(argv, "--add-opens=java.base/java.util=ALL-UNNAMED") < main)
    assert.are.equal(home .. "/lib/a.jar:" .. home .. "/lib/b.jar", argv[index(argv, "-cp") + 1])
    assert.are.same({ "--configDir", home .. "/conf", "-Dx.size=1b", "-Dy.size=2b",
      "-Djobmanager.bind-host=0.0.0.0", "-Drest.bind-address=0.0.0.0" },
      { table.unpack(argv, main + 1, main + 6) })
    assert.is_nil(argv[main + 7])
  end)

  it("keeps what the configuration sets and logs with its log4j2 file", function()
    conf("jobmanager.bind-host: 10.0.0.1   # ours\nrest.bind-address: '10.0.0.2'\n"
      .. "env.java.opts.jobmanager: -Dfoo=1 -Dbar=2\n")
    fx.write(home .. "/conf/log4j-console.properties", "rootLogger.level = INFO\n")
    local argv, code, out = run("jobmanager")
    assert.are.equal(0, code, out)
    assert.is_nil(index(argv, "-Djobmanager.bind-host=0.0.0.0"), out)
    assert.is_nil(index(argv, "-Drest.bind-address=0.0.0.0"), out)
    assert.truthy(index(argv, "-Dfoo=1") and index(argv, "-Dbar=2"), out)
    assert.truthy(index(argv, "-Dlog4j.configurationFile=file:" .. home .. "/conf/log4j-console.properties"), out)
  end)

  it("taskmanager: TaskManagerRunner advertising the pod IP; log4j 1 files are replaced", function()
    conf("jobmanager.rpc.address: wordcount-jobmanager\n")
    fx.write(home .. "/conf/log4j-console.properties", "log4j.rootLogger=INFO, stdout\n")
    local argv, code, out = run("taskmanager", "POD_IP=10.1.2.3")
    assert.are.equal(0, code, out)
    local main = index(argv, "org.apache.flink.runtime.taskexecutor.TaskManagerRunner")
    assert.truthy(main, out)
    assert.truthy(index(argv, "-Dtaskmanager.bind-host=0.0.0.0") > main)
    assert.truthy(index(argv, "-Dtaskmanager.host=10.1.2.3") > main)
    assert.truthy(index(argv, "-Dlog4j.configurationFile=file:" .. home .. "/image/log4j-console.properties"), out)
  end)

  it("prefers config.yaml to the legacy flink-conf.yaml, as Flink 1.20 does", function()
    conf("taskmanager.host: from-legacy\n")
    fx.write(home .. "/conf/config.yaml", "taskmanager.host: from-standard\n")
    local out, code = sh("FLINK_HOME=" .. quote(home) .. " . " .. quote(home .. "/bin/flink-env.sh")
      .. " && conf_get taskmanager.host && conf_get taskmanager.bind-host")
    assert.are.equal(1, code, out)
    assert.are.equal("from-standard\n", out)
  end)

  it("runs any other command as given, and fails with a message when BashJavaUtils gives nothing", function()
    local _, code, out = run("echo hello")
    assert.are.equal(0, code)
    assert.are.equal("hello\n", out)
    conf("jobmanager.rpc.address: x\n")
    assert(os.execute("printf '#!/bin/sh\\necho broken\\nexit 1\\n' >" .. quote(home .. "/stub/java")))
    _, code, out = run("jobmanager")
    assert.are.equal(1, code, out)
    assert.truthy(out:match("BashJavaUtils gave no JM memory parameters"), out)
  end)
end)

describe("tests/env/image/components.sh reads the Dockerfile", function()
  local function components(expr)
    local out, code = sh("TESTENV_SRC=" .. quote(ENV) .. " FLINK_VERSION=1.20.5 . "
      .. quote(ENV .. "/image/components.sh") .. " && " .. expr)
    assert.are.equal(0, code, out)
    return (out:gsub("\n$", ""))
  end

  it("the final stage's runtime packages, USER and ENTRYPOINT", function()
    local pkgs = components("controller_runtime_pkgs")
    assert.truthy(pkgs:match("^[%w.+-]+,[%w.,+-]+$"), pkgs)
    for _, p in ipairs({ "liblua5.4-0", "lua-cjson", "libcurl4", "ca-certificates" }) do
      assert.truthy(("," .. pkgs .. ","):find("," .. p .. ",", 1, true), pkgs)
    end
    assert.are.equal("65532:65532", components("dockerfile_final USER"))
    assert.are.same({ "/usr/local/bin/flink-controller" }, cjson.decode(components("dockerfile_final ENTRYPOINT")))
  end)

  it("tags the Flink image with the full and the minor version", function()
    assert.are.equal("docker.io/library/flink:1.20.5,docker.io/library/flink:1.20",
      components("echo $FLINK_IMAGE_TAGS"))
  end)
end)
