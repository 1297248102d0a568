---@meta ecs
--[[
types/ecs.lua -- LuaLS (lua-language-server) annotations of the Lua API:
the module require("ecs"), its objects (worlds, component managers,
queries, the built-in transform and names managers, observers), the C
plugins (require("ecs.pointmass"), "ecs.mesh", "ecs.grid", "ecs.motion")
and the Lua helper require("ecs.message").

A definition file: the functions below are empty stubs, never used. `---@meta ecs` makes it what
`require("ecs")` resolves to; the plugins' modules are typed by their class
name (`local grid = require("ecs.grid") ---@type ecs.grid`). The rock
installs it as <lua dir>/ecs/types/ecs.lua, beside the C headers
(<lua dir>/ecs/include): add <lua dir>/ecs/types (or the whole <lua dir>) to
LuaLS's `workspace.library`. spec/project/annotations_spec.lua fails when a
function or method exists at run time that is not annotated here, or the
other way round. Class names are the objects' type names (`__name`, as
error messages say them); lower-case classes are modules.
]]
-- stubs only: their arguments are unused and the class tables are only filled
-- luacheck: ignore 212 241

------------------------------------------------------------------------
-- Types without methods
------------------------------------------------------------------------

---An entity handle: a light userdata carrying a 30-bit id (22-bit index,
---8-bit generation). `ecs.null` (index 0) means "no entity".
---@class ecs.Entity

---A spawn template made by `world:prefab(spec)`.
---@class ecs.Prefab

---A native (C) system, made by a C plugin (e.g. `require("ecs.motion")`):
---run by `world:system(name, q, native)` or `q:run(native, dt)`.
---@class ecs.NativeSystem

---Components and their values for `world:spawn` and `world:prefab`: keys are
---component names (or the components); a value is a table of field values
---(positional in schema order, or by field name; in spawn a field may be an
---array of n values) or `true` for a tag. A component given twice (by name and
---as the object) is an error.
---@alias ecs.SpawnSpec table<string, table|boolean>

---A term list for `world:query{...}`: components, plus `without`,
---`changed` and `added` lists of components.
---A query term: a component manager, or `world.transform` (its columns
---`transform.px` .. `transform.sz`, and the read-only `transform.wx` .. `wz`).
---@alias ecs.Term ecs.Component|ecs.Transform

---@class ecs.QuerySpec
---@field [integer] ecs.Term
---@field without? ecs.Term[]
---@field disabled? boolean # list disabled entities too (default false)
---@field any? ecs.Term[] # at least one of these (no columns)
---@field optional? ecs.Term[] # read-only columns, zero where absent
---@field changed? ecs.Term[]
---@field added? ecs.Term[]

---Scheduling options of `world:system` and `world:replace_system`.
---@class ecs.SystemOptions
---@field phase? string # the phase whose `world:update(dt, phase)` runs it ("update")
---@field after? string|string[] # systems of the phase it runs after
---@field before? string|string[] # systems of the phase it runs before
---@field interval? number # run once per whole interval of dt, with dt = interval

---One entry of `world:managers()`.
---@class ecs.ManagerInfo
---@field name string
---@field kind string
---@field namespace "component"|"manager"
---@field records integer
---@field live integer
---@field bytes integer

---One entry of `world:stats()`.
---@class ecs.SystemStats
---@field name string
---@field kind "lua"|"expression"|"native"|"external"
---@field phase string
---@field calls integer
---@field seconds number
---@field entities integer
---@field enabled boolean

---Initial values of `world.transform:add(e, opts)`; any other key is an error.
---@class ecs.TransformInit
---@field position? number[] # { x, y, z }
---@field rotation? number[] # quaternion { x, y, z, w }
---@field scale? number[] # { x, y, z }

---A Lua system: `fn(dt, query)` (query nil for a system without one); it may
---return the number of entities it processed, for `world:stats()`. A string
---it raises leaves `update` as "system '<name>': <error>" with the system's
---traceback; any other value unchanged.
---@alias ecs.SystemFunction fun(dt: number, query: ecs.Query?): integer?

------------------------------------------------------------------------
-- The module: require("ecs")
------------------------------------------------------------------------

---@class ecs
---@field null ecs.Entity # the null entity (index 0, generation 0)
---@field MAX_ENTITIES integer # live entities a world can hold
---@field _VERSION string # "ecs 0.1.0"
---@field include_dir string? # directory of the public C headers, for plugins
local ecs = {}

---@param v any
---@return boolean # v is an entity handle
function ecs.is_entity(v) end

---@param e ecs.Entity
---@return integer # the 30-bit id
function ecs.id(e) end

---@param id integer # a 30-bit id
---@return ecs.Entity # the handle (no liveness check)
function ecs.entity(id) end

---@param e ecs.Entity
---@return integer
function ecs.index(e) end

---@param e ecs.Entity
---@return integer
function ecs.generation(e) end

---@param e ecs.Entity
---@return string # "entity(index.generation)"
function ecs.tostring(e) end

---A new, independent world.
---@param options? { threads: integer? } # threads: 1 to 64 (docs/threads.md); any other key is an error
---@return ecs.World
function ecs.world(options) end

---A new world equal to the one the snapshot was taken of: its components are
---made from the blob's schemas, cleanup policies ("to:entity!clear") included.
---@param blob string # from world:snapshot()
---@return ecs.World
function ecs.restore(blob) end

------------------------------------------------------------------------
-- ecs.World
------------------------------------------------------------------------

---@class ecs.World
---@field transform ecs.Transform # the built-in transform manager
---@field names ecs.Names # the built-in names manager
local World = {}

---@param n? integer # how many: then a list is returned
---@return ecs.Entity
---@overload fun(self: ecs.World, n: integer): ecs.Entity[]
function World:create(n) end

---@param e ecs.Entity|ecs.Entity[]
---@return boolean # false if e was not alive
---@overload fun(self: ecs.World, list: ecs.Entity[]): integer
function World:destroy(e) end

---@param e ecs.Entity
---@return boolean # false for destroyed, stale or null handles
function World:alive(e) end

---Disable `e`: it keeps its components; queries skip it unless made with `disabled = true`.
---@param e ecs.Entity # alive
function World:disable(e) end

---Enable `e` again (nothing if it is enabled).
---@param e ecs.Entity # alive
function World:enable(e) end

---@param e ecs.Entity
---@return boolean # alive and not disabled (false for a dead entity)
function World:enabled(e) end

---@return integer # live entities
function World:count() end

---@return integer # bytes of C memory the world holds
function World:memory() end

---@return ecs.ManagerInfo[] # one per manager, in registration order
function World:managers() end

---What e has, for reading while debugging: its handle and name, then one
---line per component (creation order) with its values, its transform and
---each plugin manager that has it. A dead or null e gives one line
---("entity(5.1) (dead)", "entity(0.0) (null)"), not an error. With
---`{ table = true }`: two tables, components by name ({ field = value },
---as get gives them) and the other managers by name (names = the name,
---transform = { position=, rotation=, scale=, parent=, world_position= },
---true for a plugin's); nil for a dead or null e.
---@param e ecs.Entity
---@param options? { table: boolean? }
---@return string|table<string, table<string, any>>?
---@return table<string, any>? managers # with `{ table = true }`
function World:inspect(e, options) end

---Iterator over live entities, in index order: `for e in world:entities() do`.
---@return fun(world: ecs.World, last: ecs.Entity?): ecs.Entity?
---@return ecs.World
---@return nil
function World:entities() end

---Runs the systems of a phase once each, in order, then a budgeted gc.
---@param dt? number # 0 when not given; must be finite (a negative dt is passed on)
---@param phase? string # "update" when not given; another must be some system's phase (else an error)
function World:update(dt, phase) end

---@return boolean ok
---@return string? # the first violated invariant
function World:check() end

---Frees the world now (also `__gc` and `<close>`); idempotent.
function World:close() end

---A component manager: fields "name:type" (f32 f64 i8 i16 i32 i64 u8 u16 u32
---bool entity lua; a bare name is f64; "target:entity!clear", "!remove" or
---"!destroy" for fields that clean up). No fields: a tag.
---@param name string
---@param fields? string[]
---With `{ migrate = true }` (or `{ migrate = { rename = { old = "new" } } }`)
---an existing component is redefined in place (hot reload): the same object
---is returned, values kept by field name and converted as set_field would.
---@param options? { migrate: boolean|{ rename: table<string, string>? }? }
---@return ecs.Component
function World:component(name, fields, options) end

---@return ecs.Component[] # in creation order
function World:components() end

---@param name string
---@return ecs.Component? # the manager registered under that name
function World:find_component(name) end

---A cached query: `world:query(C1, C2, ...)` or `world:query{ C1, without = {...} }`.
---@param spec ecs.QuerySpec|ecs.Term
---@param ... ecs.Term
---@return ecs.Query
function World:query(spec, ...) end

---Registers a system: a Lua function, an expression string or a native
---system, over a query (or a Lua function alone: `world:system(name, fn [, opts])`).
---A Lua function or a native system takes no params: its options may come
---right after it (`world:system(name, q, fn, { phase = "draw" })`) or fifth
---after a nil. An expression's fourth argument is its params; options given
---there instead (only option keys, none a parameter of it) are an error.
---@param name string
---@param query ecs.Query|ecs.SystemFunction
---@param body? ecs.SystemFunction|string|ecs.NativeSystem|ecs.SystemOptions
---@param params? table<string, number>|ecs.SystemOptions # an expression's parameters; else the options
---@param options? ecs.SystemOptions
---@overload fun(self: ecs.World, name: string, fn: ecs.SystemFunction, options?: ecs.SystemOptions)
function World:system(name, query, body, params, options) end

---@param name string
---@return boolean # false if there was no system of that name
function World:remove_system(name) end

---Swaps the body of an existing system, keeping its place in the run order.
---Arguments as `world:system`'s.
---@param name string
---@param query ecs.Query|ecs.SystemFunction
---@param body? ecs.SystemFunction|string|ecs.NativeSystem|ecs.SystemOptions
---@param params? table<string, number>|ecs.SystemOptions # an expression's parameters; else the options
---@param options? ecs.SystemOptions
---@overload fun(self: ecs.World, name: string, fn: ecs.SystemFunction, options?: ecs.SystemOptions)
function World:replace_system(name, query, body, params, options) end

---@param name string
---@param on boolean
function World:enable_system(name, on) end

---@return string[] # system names in run order
function World:systems() end

---@param phase? string # only the systems of that phase
---@return ecs.SystemStats[]
function World:stats(phase) end

function World:reset_stats() end

---n entities with the components of spec (or a prefab, with overrides).
---@param n integer
---@param spec ecs.SpawnSpec|ecs.Prefab
---@param overrides? ecs.SpawnSpec
---@return ecs.Entity[]
function World:spawn(n, spec, overrides) end

---@param spec ecs.SpawnSpec # copied when made; no per-entity arrays
---@return ecs.Prefab
function World:prefab(spec) end

---@param e ecs.Entity
---@return ecs.Entity # a new entity with every component of e
function World:clone(e) end

---@return string # the whole world as a blob (with a checksum)
function World:snapshot() end

---Rollback in place: the world becomes equal to the blob; its components,
---queries and systems stay valid. A component of the blob the world lacks is
---registered (find_component gives it), as ecs.restore makes it; a plugin
---manager the world lacks is an error naming it. All or nothing. Inside a
---loop over a query it wins: the loop writes nothing more back, ends at its
---next step and completes no pass (a q:pointers loop refuses it instead).
---@param blob string
---With `{ migrate = true }` the blob's components may have other schemas:
---each is converted into the live one of its name (fields by name; rename
---per component: `{ migrate = { rename = { P = { old = "new" } } } }`).
---@param options? { migrate: boolean|{ rename: table<string, table<string, string>>? }? }
function World:restore(blob, options) end

---Starts recording every change (one journal per world at a time), a
---restore of the world included.
---@return ecs.Journal
function World:journal() end

---A world equal to the delta's base becomes equal to the journal's world
---when the delta was made; any other world raises and is left unchanged.
---Inside a loop over a query it wins, as world:restore does.
---@param delta string # from journal:delta()
function World:apply_delta(delta) end

---A 64-bit hash of the world's state: equal worlds have equal hashes,
---whatever their row order.
---@return integer
function World:state_hash() end

------------------------------------------------------------------------
-- ecs.Component
------------------------------------------------------------------------

---A component manager: its fields are columns in C.
---@class ecs.Component
---@field name string
local Component = {}

---Creates or overwrites e's values: positional in schema order, or one
---table by field name; missing fields are zero.
---@param e ecs.Entity
---@param ... any
function Component:add(e, ...) end

---Like add, but an error if e has no such component.
---@param e ecs.Entity
---@param ... any
function Component:set(e, ...) end

---@param e ecs.Entity
---@return any ... # the values in schema order, or nothing
function Component:get(e) end

---@param e ecs.Entity
---@param field string
---@return any # nil if e has no such component
function Component:field(e, field) end

---@param e ecs.Entity
---@param field string
---@param value any
function Component:set_field(e, field, value) end

---@param list ecs.Entity[]
---@param field string
---@return table # values[i] is the field of list[i] (nil where absent); values.n = #list
function Component:get_many(list, field) end

---@param list ecs.Entity[]
---@param field string
---@param values any # one value for all, or an array of #list values
function Component:set_many(list, field, values) end

---@param e ecs.Entity
---@return boolean
function Component:has(e) end

---@param e ecs.Entity
---@return boolean # false if e was dead or had none
function Component:remove(e) end

---@return integer # instances whose entity is alive
function Component:count() end

---@return integer # instances stored, dead entities' included
function Component:size() end

---@param budget? integer
---@return integer # dead records reclaimed
function Component:gc(budget) end

---@return string[] # the schema, normalised: { "x:f32", ... }
function Component:fields() end

---@return fun(): ecs.Entity? # iterator over the live entities having it
function Component:entities() end

---@param fn fun(e: ecs.Entity) # after e gains the component
---@return ecs.Observer
function Component:on_add(fn) end

---@param fn fun(e: ecs.Entity) # before e loses it (still readable)
---@return ecs.Observer
function Component:on_remove(fn) end

---@param fn fun(e: ecs.Entity) # after add, set, set_field or set_many wrote a value (a new instance: after on_add)
---@return ecs.Observer
function Component:on_set(fn) end

------------------------------------------------------------------------
-- ecs.Query
------------------------------------------------------------------------

---@class ecs.Query
local Query = {}

---@return integer # live matches
function Query:count() end

---`for e in q:entities() do`
---@return fun(state: any, last: any): ecs.Entity?
---@return any
---@return nil
---@return any # to-be-closed
function Query:entities() end

---Chunks of plain Lua arrays, written back when the loop moves on:
---`for n, x, dx in q:columns("Position.x", "Velocity.dx:in") do`. A
---world:restore, j:undo() or apply_delta in the body drops the pending chunk
---and ends the loop.
---@param spec string # "Component.field", ":in" for read-only, or "entity"
---@param ... string
---@return function # the iterator: n (1..1024), then one array per spec
---@return any
---@return nil
---@return any # to-be-closed: writes the pending chunk back
function Query:columns(spec, ...) end

---fn(e, v1, v2, ...) once per match; its results are written back to the
---writable specs. A world:restore, j:undo() or apply_delta inside fn drops
---that call's results and ends the loop.
---@param fn function # fn(e, v1, v2, ...) -> new values of the writable specs, in order
---@param ... string # column specs, as for columns
---@return integer # entities visited
function Query:each(fn, ...) end

---q:columns as a callback: fn(n, a1, a2, ...) once per chunk with the
---arrays q:columns yields for the same specs; the writable ones are
---written back after each call, also when fn raises (the error then goes
---on unchanged). fn's results are ignored. A world:restore, j:undo() or
---apply_delta inside fn drops that chunk and ends the loop.
---@param fn fun(n: integer, ...: table) # n (1..1024), then one array per spec
---@param spec string # "Component.field", ":in" for read-only, or "entity"
---@param ... string
---@return integer # entities visited (the sum of n)
function Query:each_chunk(fn, spec, ...) end

---LuaJIT only: a zero-copy loop. Each step yields n and one FFI pointer per
---spec into the C columns (float*, double*, int32_t*, bool* ...; const for
---":in"), indexed 1..n: each chunk is a run of the rows themselves, however
---short (nothing is copied or written back, so a set or a nested loop in the
---body is seen at once and kept). The columns' components are pinned until
---the loop ends: adding or removing their instances, restore, undo and
---apply_delta raise meanwhile. A loop left early keeps the pins until its
---state is collected or closed (loop:close()). Raises on Lua versions
---without the FFI.
---@param spec string # "Component.field" or "Component.field:in"
---@param ... string
---@return fun(loop: ecs.PointerLoop): integer?, ... # step: n, then the pointers
---@return ecs.PointerLoop loop
function Query:pointers(spec, ...) end

---@class ecs.PointerLoop
local PointerLoop = {}

---Ends a q:pointers loop now: releases the pins (nothing is written back:
---the loop wrote the columns in place). Idempotent.
function PointerLoop:close() end

---Runs an expression over every match in C.
---@param expr string # e.g. "Position.x += Velocity.dx * dt"
---@param params? table<string, number>
---@return integer # entities processed
function Query:apply(expr, params) end

---@return integer # compiled expressions the query keeps (at most 32)
function Query:programs() end

---@return ecs.Component[] with
---@return ecs.Component[] without
---@return ecs.Component[] any
---@return ecs.Component[] optional
function Query:components() end

---@param native ecs.NativeSystem
---@param dt? number
---@return integer # entities processed
function Query:run(native, dt) end

------------------------------------------------------------------------
-- ecs.Transform (world.transform)
------------------------------------------------------------------------

---@class ecs.Transform
local Transform = {}

---@param e ecs.Entity
---@param init? ecs.TransformInit # identity when not given
function Transform:add(e, init) end

---@param e ecs.Entity
---@return boolean # false: e is dead or has no transform
function Transform:remove(e) end

---@param e ecs.Entity
---@return boolean
function Transform:has(e) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
function Transform:set_local_position(e, x, y, z) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
---@param w number
function Transform:set_local_rotation(e, x, y, z, w) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
function Transform:set_local_scale(e, x, y, z) end

---@param entities ecs.Entity[]
---@param xs number[]
---@param ys number[]
---@param zs number[]
function Transform:set_local_positions(entities, xs, ys, zs) end

---@param entities ecs.Entity[]
---@param xs number[]
---@param ys number[]
---@param zs number[]
---@param ws number[]
function Transform:set_local_rotations(entities, xs, ys, zs, ws) end

---@param entities ecs.Entity[]
---@param xs number[]
---@param ys number[]
---@param zs number[]
function Transform:set_local_scales(entities, xs, ys, zs) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
function Transform:local_position(e) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
---@return number w
function Transform:local_rotation(e) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
function Transform:local_scale(e) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
function Transform:world_position(e) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
---@return number w
function Transform:world_rotation(e) end

---@param e ecs.Entity
---@return number ... # 16 numbers, column-major
function Transform:world_matrix(e) end

---@param entities ecs.Entity[]
---@param xs? number[] # filled in (new tables when not given)
---@param ys? number[]
---@param zs? number[]
---@return number[] xs
---@return number[] ys
---@return number[] zs
function Transform:world_positions(entities, xs, ys, zs) end

---@param child ecs.Entity
---@param parent ecs.Entity # ecs.null detaches
---@param keep_world? boolean # keep the world transform instead of the local one
function Transform:set_parent(child, parent, keep_world) end

---@param e ecs.Entity
---@return ecs.Entity # ecs.null for a root
function Transform:parent(e) end

---@param e ecs.Entity
---@return fun(): ecs.Entity? # the live children, in attachment order
function Transform:children(e) end

---@param e ecs.Entity
---@return integer # entities destroyed
function Transform:destroy_tree(e) end

---@param budget? integer
---@return integer # rows reclaimed
function Transform:gc(budget) end

---@return integer # rows in use
function Transform:size() end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Transform:on_add(fn) end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Transform:on_remove(fn) end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Transform:on_set(fn) end

------------------------------------------------------------------------
-- ecs.Names (world.names)
------------------------------------------------------------------------

---@class ecs.Names
local Names = {}

---@param e ecs.Entity # alive
---@param name string # any bytes; several entities may share a name (find returns the latest)
function Names:set(e, name) end

---@param e ecs.Entity
---@return string?
function Names:get(e) end

---@param e ecs.Entity
---@return boolean # false if it had no name
function Names:clear(e) end

---@param name string
---@return ecs.Entity? # the live entity most recently given that name
function Names:find(name) end

---@param budget? integer
---@return integer # records reclaimed
function Names:gc(budget) end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Names:on_add(fn) end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Names:on_remove(fn) end

---@param fn fun(e: ecs.Entity)
---@return ecs.Observer
function Names:on_set(fn) end

------------------------------------------------------------------------
-- ecs.Observer (C:on_add(fn) and the like)
------------------------------------------------------------------------

---@class ecs.Observer
local Observer = {}

---Stops it (also `<close>`); idempotent.
function Observer:close() end

---@return boolean # not closed, and its world open
function Observer:active() end

------------------------------------------------------------------------
-- ecs.Journal (world:journal())
------------------------------------------------------------------------

---@class ecs.Journal
local Journal = {}

---The changes since the journal's mark (its start or the last delta) as a
---string for world:apply_delta; the mark moves to now.
---@return string
function Journal:delta() end

---Takes the world back to the journal's mark (also across restores since).
---Inside a loop over a query it wins, as world:restore does.
function Journal:undo() end

---Stops recording (also `<close>` and collection); idempotent.
function Journal:close() end

---@return boolean # recording: not closed, and its world open
function Journal:active() end

------------------------------------------------------------------------
-- require("ecs.pointmass")
------------------------------------------------------------------------

---@class ecs.pointmass
local pointmass = {}

---@param world ecs.World
---@return ecs.PointMass # the world's point-mass manager (created once)
function pointmass.new(world) end

---@class ecs.PointMass
local PointMass = {}

---Overwrites if present.
---@param e ecs.Entity
---@param mass number
---@param x? number
---@param y? number
---@param z? number
---@param vx? number
---@param vy? number
---@param vz? number
function PointMass:add(e, mass, x, y, z, vx, vy, vz) end

---@param e ecs.Entity
---@return boolean # whether e had a point mass
function PointMass:remove(e) end

---@param e ecs.Entity
---@return boolean
function PointMass:has(e) end

---@param e ecs.Entity
---@return number? # nothing if e has none
function PointMass:mass(e) end

---@param e ecs.Entity
---@return number x
---@return number y
---@return number z
function PointMass:position(e) end

---@param e ecs.Entity
---@return number vx
---@return number vy
---@return number vz
function PointMass:velocity(e) end

---@param e ecs.Entity
---@return number ax
---@return number ay
---@return number az
function PointMass:acceleration(e) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
function PointMass:set_position(e, x, y, z) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
function PointMass:set_velocity(e, x, y, z) end

---@param e ecs.Entity
---@param x number
---@param y number
---@param z number
function PointMass:set_acceleration(e, x, y, z) end

---Integrates every instance once, in C.
---@param dt number
function PointMass:simulate(dt) end

---@param position ecs.Component # with numeric fields x, y (and z)
---@return integer # entities updated
function PointMass:copy_positions(position) end

---@return integer # instances whose entity is alive
function PointMass:count() end

---@param budget? integer
---@return integer # records reclaimed
function PointMass:gc(budget) end

------------------------------------------------------------------------
-- require("ecs.mesh")
------------------------------------------------------------------------

---@class ecs.mesh
local mesh = {}

---@param world ecs.World
---@return ecs.Mesh # the world's mesh manager (created once)
function mesh.new(world) end

---@class ecs.Mesh
local Mesh = {}

---@param e ecs.Entity
---@param mesh_id integer # u32
---@return integer # how many meshes e has now
function Mesh:add(e, mesh_id) end

---@param e ecs.Entity
---@return integer[] # mesh ids, in the order they were added
function Mesh:meshes(e) end

---@param e ecs.Entity
---@param mesh_id integer
---@return boolean # the first instance with that id was removed
function Mesh:remove(e, mesh_id) end

---@param e ecs.Entity
---@return integer # instances removed
function Mesh:remove_all(e) end

---@param e ecs.Entity
---@return boolean
function Mesh:has(e) end

---@return integer # instances whose entity is alive
function Mesh:count() end

---@return integer # instances stored, dead entities' included
function Mesh:size() end

---@param budget? integer
---@return integer # records reclaimed
function Mesh:gc(budget) end

------------------------------------------------------------------------
-- require("ecs.grid")
------------------------------------------------------------------------

---@class ecs.grid
local grid = {}

---A uniform grid of cell x cell cells over [0, width) x [0, height).
---@param cell number
---@param width number
---@param height number
---@return ecs.Grid
function grid.new(cell, width, height) end

---@class ecs.Grid
local Grid = {}

---Bins every live entity having both (Position.x, .y; Collider.r, .layer, .mask).
---@param position ecs.Component
---@param collider ecs.Component
---@return integer # entities binned
function Grid:build(position, collider) end

---Overlapping pairs of the last build: as[k] sees bs[k], k = 1..n.
---@param as? ecs.Entity[] # filled in (new tables when not given)
---@param bs? ecs.Entity[]
---@return integer n
---@return ecs.Entity[] as
---@return ecs.Entity[] bs
function Grid:pairs(as, bs) end

---@param x number
---@param y number
---@param radius number
---@param layers integer # bit mask
---@param except? ecs.Entity
---@return ecs.Entity? # nil when none
---@return number? distance
function Grid:nearest(x, y, radius, layers, except) end

---@return integer # entities binned by the last build
function Grid:count() end

---@return integer columns
---@return integer rows
---@return number cell
function Grid:size() end

------------------------------------------------------------------------
-- require("ecs.motion")
------------------------------------------------------------------------

---@class ecs.motion
local motion = {}

---For every match adds rate * dt to target, per pair of column specs.
---@param target string # e.g. "Position.x"
---@param rate string # e.g. "Velocity.dx:in"
---@param ... string # more target, rate pairs (at most 16 pairs)
---@return ecs.NativeSystem
function motion.integrate(target, rate, ...) end

---Scales a column by 1 - (1 - factor) * dt.
---@param spec string
---@param factor number # in [0, 1]: what is left after one second
---@return ecs.NativeSystem
function motion.damp(spec, factor) end

------------------------------------------------------------------------
-- require("ecs.message")
------------------------------------------------------------------------

---@class ecs.message
local message = {}

---@param world ecs.World
---@return ecs.message.Bus
function message.new(world) end

---Messages to an entity and its subtree (world.transform:children).
---@class ecs.message.Bus
local Bus = {}

---fn(e, ...) for entities having component (a manager or a component name).
---@param component ecs.Component|string|{ has: fun(self: any, e: ecs.Entity): boolean }
---@param name string
---@param fn fun(e: ecs.Entity, ...: any)
---@return ecs.message.Bus self
function Bus:on(component, name, fn) end

---@param component ecs.Component|string|table
---@param name string
---@param fn? function # nil: every handler of that component and message
---@return integer # handlers removed
function Bus:off(component, name, fn) end

---@param e ecs.Entity
---@param name string
---@param ... any
---@return integer # handler calls (e and its subtree)
function Bus:send(e, name, ...) end

---@param e ecs.Entity
---@param name string
---@param ... any
---@return integer # handler calls (e, then its ancestors)
function Bus:send_up(e, name, ...) end

return ecs
