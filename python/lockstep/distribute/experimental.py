"""tf.distribute.experimental: the collective options and the experimental spelling of MultiWorkerMirroredStrategy."""
from .. import _unimplemented
from ._strategy import (CollectiveCommunication, CommunicationImplementation, CommunicationOptions,  # noqa: F401
                        ValueContext)
from ._strategy import CentralStorageStrategy  # noqa: F401
from ._strategy import _ExperimentalMultiWorkerMirroredStrategy as MultiWorkerMirroredStrategy  # noqa: F401

_unimplemented.install(globals(), "tf.distribute.experimental")
