// Registers the run room's unit-test ops (unit_ops.hpp) for the cpu backend; the unit-test
// executable links no corpus, so these are the cpu backend's only ops there.
#include "unit_ops.hpp"

namespace caliber::run::test {

CALIBER_REGISTER_OP("cpu", UnitOp<Behaviour::ok>);
CALIBER_REGISTER_OP("cpu", UnitOp<Behaviour::raise>);
CALIBER_REGISTER_OP("cpu", UnitOp<Behaviour::skip>);
CALIBER_REGISTER_OP("cpu", UnitOp<Behaviour::wrong>);
CALIBER_REGISTER_OP("cpu", UnitOp<Behaviour::huge>);

}  // namespace caliber::run::test
