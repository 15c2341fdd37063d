// Reads and rewrites DeepSeek Harness session logs for ameesh (run with the Node that runs dsh, which has
// Zstandard in node:zlib). A log `session.jsonl.zstd` is a concatenation of Zstandard frames: the first
// holds only the header line {"type":"session","id","cwd",…}, each later one a batch of JSON lines.
//
//   node dsh_session.mjs read FILE          print the log's JSON lines
//   node dsh_session.mjs recwd CWD FILE…    set the header's cwd to CWD
//   node dsh_session.mjs cut SEQ FILE       drop the events from sequence number SEQ on (a rewind)
// A rewritten log keeps the header alone in the first frame and the other lines in one frame after it;
// it replaces the old one atomically.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { zstdCompressSync, zstdDecompressSync } from "node:zlib";

const plain = (file) => file.endsWith(".jsonl");

function lines(file) {
  const raw = readFileSync(file);
  return (plain(file) ? raw : zstdDecompressSync(raw)).toString("utf8");
}

function rewrite(file, edit) {
  const text = lines(file);
  const cut = text.indexOf("\n");
  const header = JSON.parse(cut < 0 ? text : text.slice(0, cut));
  if (header.type !== "session") throw new Error(`${file}: no session header`);
  const rest = edit(header, cut < 0 ? [] : text.slice(cut + 1).split("\n").filter((line) => line !== ""));
  const encode = (s) => (plain(file) ? Buffer.from(s, "utf8") : zstdCompressSync(Buffer.from(s, "utf8")));
  const head = encode(JSON.stringify(header) + "\n");
  const body = rest.length === 0 ? [head] : [head, encode(rest.join("\n") + "\n")];
  const tmp = file + ".ameesh-tmp";
  writeFileSync(tmp, Buffer.concat(body));
  renameSync(tmp, file);
}

function recwd(cwd, file) {
  rewrite(file, (header, rest) => {
    header.cwd = cwd;
    return rest;
  });
}

function cutAt(seq, file) {
  rewrite(file, (_header, rest) => rest.filter((line) => (JSON.parse(line).seq ?? JSON.parse(line).seq0 ?? -1) < seq));
}

const [command, ...args] = process.argv.slice(2);
if (command === "read" && args.length === 1) {
  process.stdout.write(lines(args[0]));
} else if (command === "recwd" && args.length >= 2) {
  for (const file of args.slice(1)) recwd(args[0], file);
} else if (command === "cut" && args.length === 2) {
  cutAt(Number(args[0]), args[1]);
} else {
  process.stderr.write("usage: dsh_session.mjs read FILE | recwd CWD FILE... | cut SEQ FILE\n");
  process.exit(2);
}
