"""Isaac Lab's actuator models, replayed on any backend in public joint order.

- :mod:`~transfer.actuators.spec`: the models a task may name (:class:`ActuatorGroup`: implicit PD, ideal PD, DC
  motor, delayed PD, MLP and LSTM actuator networks) as plain values;
- :mod:`~transfer.actuators.kernels`: the Warp kernels (delay buffers, the explicit PD law, the clips);
- :mod:`~transfer.actuators.runtime`: :class:`Actuators`, the per-physics-step torque of an articulation's explicit
  groups, which :meth:`transfer.Articulation.set_actuators` applies as joint effort before every physics step.

Implicit groups are the engine's own PD drive (nothing to compute); explicit groups turn the engine's drive off
(stiffness and damping 0) and get their torque from here, the same computation on PhysX and on Newton.
"""

from transfer.actuators.spec import ACTUATOR_MODELS, EXPLICIT_MODELS, ActuatorError, ActuatorGroup

__all__ = ["ACTUATOR_MODELS", "EXPLICIT_MODELS", "ActuatorError", "ActuatorGroup", "Actuators"]


def __getattr__(name: str):  # the runtime loads warp; the spec does not
    if name == "Actuators":
        from transfer.actuators.runtime import Actuators

        return Actuators
    raise AttributeError(name)
