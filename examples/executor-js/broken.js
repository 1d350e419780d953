'use strict';
// The executor with one bug, to see what verify prints when an executor breaks the page: a
// non-idempotent write is retried after an infrastructure failure, like a read. Only the first
// line below differs from main.js's behaviour.
//
//   atmostonce verify --quick --executor-cmd "node examples/executor-js/broken.js"

require('./spec').RETRYABLE.add('non_idempotent_write');
require('./main').serve(process.stdin, process.stdout);
