// parse.js FILE...: parse each file as a TLA+ module with tree-sitter's TLA+
// grammar and print one line per file: "ok FILE", or "bad FILE" followed by
// one line per ERROR or MISSING node ("  LINE:COL ERROR|MISSING text").
// Run with NODE_PATH pointing at a node_modules that holds tree-sitter and
// @tlaplus/tree-sitter-tlaplus (scripts/deps.sh installs them).
'use strict';
const fs = require('fs');
const Parser = require('tree-sitter');
const TLAPlus = require('@tlaplus/tree-sitter-tlaplus');

const parser = new Parser();
parser.setLanguage(TLAPlus);
for (const file of process.argv.slice(2)) {
  const src = fs.readFileSync(file, 'utf8');
  const tree = parser.parse(src);
  const problems = [];
  const walk = (n) => {
    if (n.isError || n.isMissing) {
      const where = `${n.startPosition.row + 1}:${n.startPosition.column + 1}`;
      const text = src.slice(n.startIndex, Math.min(n.endIndex, n.startIndex + 60)).replace(/\n/g, ' ');
      problems.push(`  ${where} ${n.isMissing ? 'MISSING ' + n.type : 'ERROR'} ${JSON.stringify(text)}`);
    }
    for (const c of n.children) walk(c);
  };
  walk(tree.rootNode);
  if (tree.rootNode.type !== 'source_file' || problems.length > 0 || tree.rootNode.hasError) {
    console.log(`bad ${file}`);
    for (const p of problems) console.log(p);
  } else {
    console.log(`ok ${file}`);
  }
}
