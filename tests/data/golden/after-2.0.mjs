// Golden vectors for the digests cowork-harness added after 2.0.0, computed
// under Node (its JSON.stringify, localeCompare and sha256 — the semantics the
// original runs on) from the algorithms as documented, not from its code:
//  - sessionFingerprint with `projects` (non-empty only; `{uuid, from}` sorted
//    by uuid with localeCompare; after `agent_env`), src/run/cassette.ts
//    `buildSessionFingerprint` and test/session-fingerprint.test.ts;
//  - `workspaceFixtureSig`: sha256 over `F:<path>\0<sha256>\0<x|->\0` per file
//    in code-point order of path, and `workspaceFixtureFileSigs` `[path, sha]`
//    with `+x` when owner-executable, src/fixture/workspace.ts.
// Run: node tests/data/golden/after-2.0.mjs > tests/data/golden/after-2.0.json
import { createHash } from "node:crypto";

const sha = (b) => createHash("sha256").update(b).digest("hex");

const baseShape = () => ({
  folders: [],
  plugins: { config_dir: null, marketplaces: [], local_marketplaces: [], enabled: [], local_plugins: [], remote_plugins: [] },
  skills: { local: [] },
  mcp: { config: null, enabled: [] },
  egress: { extra_allow: [], unrestricted: false },
  web_fetch: { approved_domains: [] },
});

const withProjects = (shape, projects) =>
  projects.length
    ? { ...shape, projects: [...projects].map((p) => ({ uuid: p.uuid, from: p.from })).sort((a, b) => a.uuid.localeCompare(b.uuid)) }
    : shape;

const sessionCases = [
  {
    id: "projects-two",
    yaml: "model: m\nprojects:\n  - uuid: u2\n    from: ./two\n  - uuid: u1\n    from: ./one\n",
    projects: [{ uuid: "u2", from: "./two" }, { uuid: "u1", from: "./one" }],
  },
  {
    id: "projects-empty",
    yaml: "model: claude-opus-4-8\nprojects: []\n",
    projects: [],
  },
  {
    id: "projects-case-and-agent-env",
    yaml:
      "folders:\n  - from: ./data\n    mode: r\nagent_env:\n  subagent_model: claude-haiku-x\nprojects:\n  - uuid: Beta\n    from: ../b\n  - uuid: alpha\n    from: ../a\n  - uuid: _c\n    from: /abs/c\n",
    projects: [{ uuid: "Beta", from: "../b" }, { uuid: "alpha", from: "../a" }, { uuid: "_c", from: "/abs/c" }],
    shape: (s) => ({
      ...s,
      folders: [{ from: "./data", mode: "r" }],
      agent_env: { CLAUDE_CODE_SUBAGENT_MODEL: "claude-haiku-x" },
    }),
  },
];

const session = sessionCases.map((c) => {
  const base = (c.shape ?? ((s) => s))(baseShape());
  const shapeJson = JSON.stringify(withProjects(base, c.projects));
  const beforeProjectsJson = JSON.stringify(base);
  return {
    id: c.id,
    yaml: c.yaml,
    shapeJson,
    expected: sha(Buffer.from(shapeJson, "utf8")),
    beforeProjectsExpected: sha(Buffer.from(beforeProjectsJson, "utf8")),
  };
});

// Fixture files: [path, content, owner-executable].
const fixtureCases = [
  {
    id: "step1",
    files: [
      ["report.md", "# step 1\n", false],
      ["data/scores.json", '{"s":1}\n', false],
    ],
  },
  {
    id: "exec-and-order",
    files: [
      ["run.sh", "#!/bin/sh\necho hi\n", true],
      ["Z.txt", "upper", false],
      ["a b/ü.txt", "unicode name", false],
      ["a/b.txt", "", false],
      ["a.txt", "dot sorts before slash", false],
    ],
  },
];

const fixture = fixtureCases.map((c) => {
  const files = c.files.map(([path, body, exec]) => ({ path, body, exec, sha256: sha(Buffer.from(body, "utf8")) }));
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const h = createHash("sha256");
  for (const f of sorted) h.update(`F:${f.path}\0${f.sha256}\0${f.exec ? "x" : "-"}\0`);
  return {
    id: c.id,
    files: c.files,
    workspaceFixtureSig: h.digest("hex"),
    workspaceFixtureFileSigs: sorted.map((f) => [f.path, f.exec ? `${f.sha256}+x` : f.sha256]),
  };
});

process.stdout.write(JSON.stringify({ about: "see after-2.0.mjs", node: process.version, session, fixture }, null, 2) + "\n");
