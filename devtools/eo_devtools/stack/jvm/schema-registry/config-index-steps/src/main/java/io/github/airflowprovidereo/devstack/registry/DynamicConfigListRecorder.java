package io.github.airflowprovidereo.devstack.registry;

import java.util.List;

import io.apicurio.common.apps.config.DynamicConfigPropertyDef;
import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import io.quarkus.runtime.RuntimeValue;
import io.quarkus.runtime.annotations.Recorder;

/** Creates, when the application starts, the {@link DynamicConfigPropertyList} recorded at build time. */
@Recorder
public class DynamicConfigListRecorder {

    /** The list of the given definitions, in their order. */
    public RuntimeValue<DynamicConfigPropertyList> propertyList(List<DynamicConfigPropertyDef> definitions) {
        return new RuntimeValue<>(new DynamicConfigPropertyList(definitions));
    }
}
