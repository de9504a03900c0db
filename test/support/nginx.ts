// nginx for the tests of this tree (nginx.test.ts, database-faults.test.ts): the helper itself lives
// in scripts/lib/nginx.ts, which the TypeScript client's tests use too.
export { CONF, type Nginx, startShippedNginx } from '../../scripts/lib/nginx.js'
