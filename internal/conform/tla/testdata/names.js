// names.js FILE...: parse each file as a TLA+ module with tree-sitter's TLA+
// grammar and print what it declares and what it refers to, one name a
// line, after a line "file FILE":
//   def NAME     an operator definition (NAME == ...)
//   const NAME   a CONSTANT declaration
//   var NAME     a VARIABLE declaration
//   bound NAME   a name bound by a quantifier, set filter or map, or function
//   ref NAME     an identifier used in an expression
//   error L:C    an ERROR or MISSING node
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
  console.log(`file ${file}`);
  const walk = (n) => {
    if (n.isError || n.isMissing) {
      console.log(`error ${n.startPosition.row + 1}:${n.startPosition.column + 1}`);
    }
    switch (n.type) {
      case 'operator_definition':
        console.log(`def ${n.childForFieldName('name').text}`);
        break;
      case 'constant_declaration':
      case 'variable_declaration':
        for (const c of n.namedChildren) {
          if (c.type === 'identifier') {
            console.log(`${n.type === 'constant_declaration' ? 'const' : 'var'} ${c.text}`);
          }
        }
        break;
      case 'quantifier_bound':
        for (const c of n.childrenForFieldName('intro')) {
          if (c.type === 'identifier') console.log(`bound ${c.text}`);
        }
        break;
      case 'identifier_ref':
        console.log(`ref ${n.text}`);
        break;
    }
    for (const c of n.children) walk(c);
  };
  walk(tree.rootNode);
}
